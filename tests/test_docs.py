"""What README.md and docs/ tell a user to type still works: every command line they show is one
the CLI accepts for its mode (parsed and checked, not run: many train for hours), every import
they show imports (from where the package keeps it now, not an old name), and README's Python
example runs."""

import contextlib
import importlib
import io
import re
import shlex
import warnings

import pytest

from spacewar_ai.cli import build_parser
from spacewar_ai.cli.parser import choose_mode
from tests.helpers import ROOT

DOCS = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md"))]
PREFIXES = ("spacewar-ai", "python spacewar_ai/main.py", "python -m spacewar_ai")
PLACEHOLDERS = {"S": "1", "N": "2", "M": "1"}  # numbers the docs leave to the reader
COMMAND = re.compile(r"^(?:spacewar-ai|python spacewar_ai/main\.py|python -m spacewar_ai)(?:\s|$)")


def _commands():
    found = set()
    for doc in DOCS:
        text = doc.read_text()
        for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
            for line in re.sub(r"\\\n\s*", " ", block).splitlines():
                line = line.strip()
                if COMMAND.match(line):
                    found.add((doc.name, re.split(r"\s+#", line)[0].strip()))
        for span in re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S)):
            if COMMAND.match(span):
                found.add((doc.name, span.strip()))
    return sorted(found)


def _imports():
    found = set()
    for doc in DOCS:
        for line in re.findall(r"(?:from spacewar_ai[\w.]* import [\w, ]+|import spacewar_ai[\w.]*)",
                               doc.read_text()):
            found.add((doc.name, line.strip().rstrip(",")))
    return sorted(found)


def test_the_docs_show_commands_and_imports():
    assert len(_commands()) >= 80 and len(_imports()) >= 8


@pytest.mark.parametrize("doc, command", _commands())
def test_a_documented_command_is_accepted_as_written(doc, command):
    prefix = next(p for p in PREFIXES if command.startswith(p))
    argv = [PLACEHOLDERS.get(word, word) for word in shlex.split(command[len(prefix):])]
    if argv == ["--help"]:
        return
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parser = build_parser()
            choose_mode(parser, parser.parse_args(argv))
    except SystemExit:
        pytest.fail(f"{doc}: `{command}` is refused: {err.getvalue().strip()}")


@pytest.mark.parametrize("doc, line", _imports())
def test_a_documented_import_imports_from_where_the_package_keeps_it(doc, line):
    module, _, names = line.removeprefix("from ").partition(" import ")
    if line.startswith("import "):
        module, names = line.removeprefix("import ").split(" as ")[0], ""
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # an old name that moved fails here
        imported = importlib.import_module(module)
    for name in filter(None, (n.strip() for n in names.split(","))):
        assert hasattr(imported, name) or importlib.util.find_spec(f"{module}.{name}"), \
            f"{doc}: {line}: no {name}"


def test_the_readmes_python_example_runs(capsys):
    block = re.search(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    exec(compile(block, "README.md", "exec"), {})
    assert capsys.readouterr().out.strip() == "NONE"  # ship 1's death cause while it lives


def test_the_servers_budgets_table_is_the_one_the_server_keeps():
    """docs/browser.md's table of budgets is the server's own declaration (web/guard.py's
    Limits), row for row: every name, default, scope and description."""
    from spacewar_ai.web.guard import Limits

    text = (ROOT / "docs" / "browser.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| (\S+) \| (each|per address|in all) \| (.+) \|$", text,
                      re.M)
    assert rows == Limits().rows()


def test_the_files_readmes_examples_write_are_kept_out_of_git():
    """A user who runs README's examples as written in a clone does not see them in `git
    status`: each file an example writes lies where .gitignore covers it."""
    import shutil
    import subprocess

    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git clone")
    text = (ROOT / "README.md").read_text()
    written = re.findall(r"--(?:export|record|results|html) (\S+?)[`\s]", text)
    assert any(path.endswith(".pt") for path in written)
    for path in written:
        ignored = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT)
        assert ignored.returncode == 0, f"{path} would show in git status"


def test_every_link_between_the_docs_leads_to_a_file_and_a_heading_that_exist():
    """README, the map, the manual and its journal link into each other by file and heading: a
    page split or a heading renamed leaves no dead link."""
    def slug(heading):
        return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")

    pages = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "docs" / "log").glob("*.md"))]
    headings = {page.resolve(): {slug(line.lstrip("#")) for line in page.read_text().splitlines()
                                 if line.startswith("#")} for page in pages}
    dead = []
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page.resolve()
            if not file.exists() or (anchor and file.suffix == ".md"
                                     and anchor not in headings.get(file, set())):
                dead.append(f"{page.relative_to(ROOT)}: {target}")
    assert not dead, dead


def test_every_script_reproduces_a_figure_a_page_cites_and_every_probe_sits_by_the_log():
    """scripts/ holds what reproduces a published figure, each cited by README, ARCHITECTURE.md
    or a page of the manual; research probes sit in docs/log/probes/, cited by a page or the
    log, and every module of the package a probe imports has a user in the package or in
    scripts/ (no module is kept for a probe alone)."""
    from tests.test_layers import import_graph, module_sources

    manual = "\n".join(p.read_text() for p in DOCS if p.name != "design-log.md")
    assert [p.name for p in sorted((ROOT / "scripts").glob("*.py"))
            if f"scripts/{p.name}" not in manual] == []
    probes = sorted((ROOT / "docs" / "log" / "probes").glob("*.py"))
    pages = "".join(p.read_text() for p in (ROOT / "docs").rglob("*.md")) + manual
    assert probes and [p.name for p in probes if f"docs/log/probes/{p.name}" not in pages] == []
    imports = re.compile(r"from (spacewar_ai(?:\.\w+)*) import")
    held = set().union(*import_graph(module_sources()).values()) | {
        m for p in (ROOT / "scripts").glob("*.py") for m in imports.findall(p.read_text())}
    assert {(p.name, m) for p in probes for m in imports.findall(p.read_text())
            if m not in held} == set()
