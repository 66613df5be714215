package db

// Raw is the connection or transaction q runs on, for the statements
// built at run time beside the generated ones.
func (q *Queries) Raw() DBTX { return q.db }
