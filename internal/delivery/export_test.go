package delivery

// MaxUnrecorded is maxUnrecorded, for the tests of package delivery_test.
const MaxUnrecorded = maxUnrecorded
