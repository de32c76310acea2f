"""A pytest plugin (tests/conftest.py loads it): the run's summary says how many browser tests
were skipped for want of Chromium and the one command that runs them, since a fresh machine
has none and README's test command passes without it."""

# The words every browser test's skip starts with (tests/web/test_app.py, tests/scripts/).
BROWSER_SKIP = "no browser at "
INSTALL = "apt-get install -y chromium"


def pytest_terminal_summary(terminalreporter):
    skipped = [r for r in terminalreporter.stats.get("skipped", [])
               if BROWSER_SKIP in str(getattr(r, "longrepr", ""))]
    if skipped:
        terminalreporter.write_line(
            f"{len(skipped)} browser tests were skipped: this machine has no Chromium; "
            f"`{INSTALL}` (as root) lets them run")
