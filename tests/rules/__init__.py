"""One test file per rule, as yamllint has tests/rules/test_<rule>.py: each asserts (rule, line,
column) and the finding's data for the rule's positive cases and nothing for its negative ones."""
