"""Runs the tests beside this file, as `python3 -m unittest discover -v` would, then a closing
"N passed, N failed, N skipped" line; the exit status is 1 when a test fails or none ran.
run_tests.sh runs it in the source tree, test_wheel.sh on a copy against the installed package."""

import sys
import unittest
from pathlib import Path

suite = unittest.defaultTestLoader.discover(str(Path(__file__).resolve().parent))
result = unittest.TextTestRunner(verbosity=2).run(suite)
# A test whose subtests fail is one failed test.
failed = len({getattr(test, "test_case", test).id() for test, _ in result.failures + result.errors}
             | {test.id() for test in result.unexpectedSuccesses})
skipped = len(result.skipped)
print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
sys.exit(0 if result.wasSuccessful() and result.testsRun > 0 else 1)
