"""The user's own tests (pytest, ctest, gtest, a command): discovered as one sanitized process each."""
