package oci

// Leftovers is leftovers, for the tests.
var Leftovers = leftovers
