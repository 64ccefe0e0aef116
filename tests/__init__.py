"""Rio's tests, grouped as the code is (docs/testing.md "Where a test lives")."""
