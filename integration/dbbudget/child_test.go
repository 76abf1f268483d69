package dbbudget

const childEnv = "DBBUDGET_CHILD_DSN"

func holdAsChild() int { return 0 }
