"""docs/configuration.md, generated from the settings modules themselves, so that it cannot drift.

Every ``env.<type>("NAME", default=...)`` call in ``memoryproject/settings/*.py`` is one environment
variable: its type is the call's, its default the source text of ``default=`` (none: required), its
description the comment block directly above the line of the call (a trailing comment on that line
is added), and its section the nearest ``# --- Section ---`` header above it. The modules are read
with ``ast``, never imported (production.py needs its variables set). A variable read without a
comment is an error: a reference needs a sentence for each.

The tenant-overridable settings are ``MEMORY_TENANT_OVERRIDABLE`` of base.py, with the rules
``tenants.models.validate_setting_overrides`` applies to an override.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ROOT / "memoryproject" / "settings"
TENANT_MODELS = ROOT / "tenants" / "models.py"
OUTPUT = ROOT / "docs" / "configuration.md"
# The order a variable's description and section are looked for in: base first, then where it is required.
MODULES = ("base", "production", "local", "test")
TYPES = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean (true, false, 1, 0)",
    "list": "comma-separated list",
    "dict": "comma-separated name=value pairs",
}
HEADER = re.compile(r"^#\s*---\s*(?P<title>.*?)\s*-*\s*$")
GENERAL = "General"
OUTSIDE_BASE = "Services, secret and HTTPS"

# Variables read by the processes rather than the settings (the launcher, Celery, Django's entry points,
# prometheus_client). ``undocumented_process_variables`` finds any other read under memoryproject/.
PROCESS_VARIABLES = {
    "DJANGO_SETTINGS_MODULE": (
        "memoryproject.settings.local",
        "Which settings module a process loads: `memoryproject.settings.local` (the default of manage.py, "
        "gunicorn's WSGI application and Celery: the embedded services where the URLs are unset), "
        "`memoryproject.settings.production` or `memoryproject.settings.test` (pytest's).",
    ),
    "PORT": ("8000", "The port `make run` (python -m memoryproject.embedded) serves on, on 127.0.0.1."),
    "GUNICORN_KEEPALIVE": (
        "75",
        "Seconds gunicorn (gunicorn.conf.py) keeps an idle connection open for its next request. Longer than the "
        "idle timeout of whatever sits in front (a load balancer or proxy reusing its connections: 60 s on AWS's ALB), "
        "or the balancer now and then sends a request on a connection gunicorn is closing (docs/deployment.md).",
    ),
    "PROMETHEUS_MULTIPROC_DIR": (
        "unset",
        "A directory shared by the processes of one host, so that /metrics adds up their figures (prometheus_client); "
        "set it whenever more than one process serves (the embedded run sets it under var/).",
    ),
}


@dataclass
class Read:
    """One ``env.<type>(...)`` call of one settings module."""

    module: str
    kind: str
    default: str | None  # as the environment would spell it; None: required
    description: str
    section: str


@dataclass
class Variable:
    name: str
    reads: list[Read] = field(default_factory=list)

    @property
    def first(self) -> Read:
        return min(self.reads, key=lambda read: MODULES.index(read.module))

    @property
    def description(self) -> str:
        for module in MODULES:
            for read in self.reads:
                if read.module == module and read.description:
                    return read.description
        return ""

    @property
    def section(self) -> str:
        return self.first.section


def _comment_above(lines: list[str], line_number: int) -> str:
    """The comment lines directly above ``line_number`` (1-based), a section header excluded, joined."""
    found: list[str] = []
    index = line_number - 2
    while index >= 0:
        text = lines[index].strip()
        if not text.startswith("#") or HEADER.match(text):
            break
        found.insert(0, text.lstrip("#").strip())
        index -= 1
    return " ".join(found)


def _trailing_comments(source: str) -> dict[int, str]:
    """Line number -> the comment ending that line of code (not a line of its own), noqa markers apart."""
    comments = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and token.line[: token.start[1]].strip() and "noqa" not in token.string:
            comments[token.start[0]] = token.string.lstrip("#").strip()
    return comments


def _spelled(source: str, node: ast.expr) -> str:
    """A default as the environment would spell it: ``true``, ``a,b``, a number as written (with its
    value when it is arithmetic), ``<NAME>-derived`` for an f-string naming another setting."""
    text = ast.get_source_segment(source, node) or ""
    if isinstance(node, ast.JoinedStr):
        return "".join(
            part.value if isinstance(part, ast.Constant) else f"<{ast.get_source_segment(source, part.value)}>"
            for part in node.values
        )
    if isinstance(node, ast.BinOp) and all(isinstance(n, ast.BinOp | ast.Constant | ast.operator) for n in ast.walk(node)):
        value = eval(compile(ast.Expression(node), "<default>", "eval"), {"__builtins__": {}})  # noqa: S307 - numbers only
        return f"{text} = {value:_}"
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return text
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple):
        return ",".join(str(item) for item in value)
    if isinstance(value, dict):
        return ",".join(f"{key}={item}" for key, item in value.items())
    if isinstance(value, str):
        return value
    return text


def _section_of(lines: list[str], line_number: int, default: str) -> str:
    for index in range(line_number - 1, -1, -1):
        match = HEADER.match(lines[index].strip())
        if match:
            return re.sub(r"\s*\(.*\)$", "", match.group("title").rstrip(" -"))
    return default


def _is_env_read(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "env"
        and node.func.attr in TYPES
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    )


def read_variables() -> dict[str, Variable]:
    """Every environment variable the settings modules read, in the order base.py reads them."""
    variables: dict[str, Variable] = {}
    for module in MODULES:
        path = SETTINGS / f"{module}.py"
        source = path.read_text()
        lines = source.splitlines()
        trailing_comments = _trailing_comments(source)
        calls = sorted((node for node in ast.walk(ast.parse(source)) if _is_env_read(node)), key=lambda node: node.lineno)
        for call in calls:
            name = call.args[0].value
            default = next((_spelled(source, k.value) for k in call.keywords if k.arg == "default"), None)
            description = _comment_above(lines, call.lineno)
            trailing = trailing_comments.get(call.lineno, "")
            if trailing:
                description = f"{description.rstrip('.')} ({trailing})." if description else trailing
            section = _section_of(lines, call.lineno, GENERAL if module == "base" else OUTSIDE_BASE)
            variables.setdefault(name, Variable(name)).reads.append(Read(module, call.func.attr, default, description, section))
    undescribed = sorted(name for name, variable in variables.items() if not variable.description)
    if undescribed:
        raise SystemExit(
            f"No comment above the read of {', '.join(undescribed)} in memoryproject/settings/: "
            "write one sentence saying what each sets, then regenerate."
        )
    return variables


def undocumented_process_variables() -> list[str]:
    """Variables read with os.environ under memoryproject/ and in gunicorn.conf.py (the settings apart)
    that PROCESS_VARIABLES does not describe."""
    read = set()
    pattern = re.compile(r"os\.environ(?:\.get|\.setdefault)?[\[(]\s*\"([A-Z0-9_]+)\"")
    for path in [*(ROOT / "memoryproject").glob("*.py"), ROOT / "gunicorn.conf.py"]:
        read.update(pattern.findall(path.read_text()))
    return sorted(read - set(PROCESS_VARIABLES) - set(read_variables()))


def _tuple_of_strings(path: Path, name: str) -> tuple[str, ...]:
    return tuple(_literal(path, name))


def _literal(path: Path, name: str) -> Any:
    """The literal value ``name`` is assigned in the module at ``path`` (read, not imported)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise SystemExit(f"{name} is not assigned in {path.relative_to(ROOT)}")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default_cell(variable: Variable) -> str:
    """The default of each module reading the variable: one value when they agree."""
    shown: dict[str, list[str]] = {}
    for read in sorted(variable.reads, key=lambda read: MODULES.index(read.module)):
        value = "**required**" if read.default is None else f"`{read.default}`" if read.default else "*empty*"
        modules = shown.setdefault(value, [])
        if read.module not in modules:
            modules.append(read.module)
    if len(shown) == 1:
        (value,) = shown
        return value
    return "<br>".join(f"{', '.join(modules)}: {value}" for value, modules in shown.items())


def _override_rule(name: str, kind: str, shares: tuple[str, ...], code_naming: tuple[str, ...]) -> str:
    """What ``tenants.models.validate_setting_overrides`` accepts for ``name``."""
    if name == "MEMORY_EMBEDDING_MODEL":
        return (
            'the name of a model the deployment offers (search.embeddings.MODELS), "openai:<model>" for a model on '
            'an OpenAI-compatible server, or "" for none'
        )
    if name == "MEMORY_EMBEDDING_BASE_URL":
        return 'an http(s) URL the egress policy lets tenants reach (MEMORY_EGRESS_ALLOWED_NETWORKS), or ""'
    if name == "MEMORY_SUMMARY_MODEL":
        return '"provider:model" with a provider of summaries.summarizer.PROVIDERS, or "" for the rule-based summary'
    if name == "MEMORY_SEARCH_MODE":
        return "hybrid, semantic or keyword"
    if name == "MEMORY_CHAT_MODEL":
        return '"provider:model" (init_chat_model\'s), or "" for none'
    if name == "MEMORY_CHAT_BASE_URL":
        return 'an http(s) URL the egress policy lets tenants reach (MEMORY_EGRESS_ALLOWED_NETWORKS), or ""'
    if name == "MEMORY_RERANK_URL":
        return 'an http(s) URL the egress policy lets tenants reach (MEMORY_EGRESS_ALLOWED_NETWORKS), or "" for none'
    if name == "MEMORY_RERANK_API":
        return "tei or cohere"
    if name == "MEMORY_RERANK_MODEL":
        return 'a model name (letters, digits and . : / @ + - _), or ""'
    if name in shares:
        return "a number from 0 to 1"
    if kind == "bool":
        return "true or false (a JSON boolean; a string is refused)"
    if kind == "int":
        return f"a whole number from 0 to {_literal(TENANT_MODELS, 'MAX_OVERRIDE_INT'):,}"
    if kind == "float":
        return f"a number from 0 to {_literal(TENANT_MODELS, 'MAX_OVERRIDE_NUMBER'):,.0f}"
    return "a string" + (" naming no code" if name in code_naming else "")


def render() -> str:
    variables = read_variables()
    overridable = _tuple_of_strings(SETTINGS / "base.py", "MEMORY_TENANT_OVERRIDABLE")
    shares = _tuple_of_strings(TENANT_MODELS, "SHARE_SETTINGS")
    code_naming = _tuple_of_strings(TENANT_MODELS, "CODE_NAMING_SETTINGS")
    out = [
        "<!-- Generated by `python -m docs.generate configuration` from memoryproject/settings/*.py: edit the",
        "     comments there, not this page. -->",
        "",
        "# Configuration",
        "",
        "The service reads its configuration from environment variables only. This page lists every one of",
        "them, generated from the settings modules (`memoryproject/settings/`): the description of each is the",
        "comment above the line that reads it.",
        "",
        "Which module a process loads is `DJANGO_SETTINGS_MODULE`:",
        "",
        "| Module | For | Services |",
        "|---|---|---|",
        "| `memoryproject.settings.local` | `make run`, `manage.py` (the default) | the URLs below, or the embedded "
        "PostgreSQL and Redis under `var/` where they are unset |",
        "| `memoryproject.settings.production` | a deployment | the URLs and `DJANGO_SECRET_KEY` are **required**; "
        "HTTPS and secure cookies on |",
        "| `memoryproject.settings.test` | `make test` | PostgreSQL, Redis and RabbitMQ on 127.0.0.1 |",
        "",
        "Every module starts from `base` and reads the variables below; a value a module reads itself (a default "
        "of its own, or **required**) is shown per module. Types: a boolean is `true`/`false` (or `1`/`0`), a "
        "list is comma-separated (`a,b,c`), a dict is `name=value,name=value`. Sizes are bytes unless the name "
        "says characters (`_CHARS`), durations seconds unless it says otherwise.",
        "",
        "## Processes",
        "",
        "| Variable | Default | Description |",
        "|---|---|---|",
    ]
    for name, (default, description) in PROCESS_VARIABLES.items():
        out.append(f"| `{name}` | `{default}` | {_cell(description)} |")
    sections: dict[str, list[Variable]] = {}
    for variable in variables.values():
        sections.setdefault(variable.section, []).append(variable)
    # The services first (what a deployment must set), then base.py's sections in its order.
    order = sorted(sections, key=lambda section: section != OUTSIDE_BASE)
    for section in order:
        out += [
            "",
            f"## {section[0].upper()}{section[1:]}",
            "",
            "| Variable | Type | Default | Description |",
            "|---|---|---|---|",
        ]
        for variable in sections[section]:
            description = variable.description
            if variable.name in overridable:
                description += " *A tenant may override it.*"
            kind = TYPES[variable.first.kind]
            out.append(f"| `{variable.name}` | {kind} | {_default_cell(variable)} | {_cell(description)} |")
    out += [
        "",
        "## What a tenant may override",
        "",
        "A tenant's own value of these settings (its `settings` in the admin, or `tenants.services.tenant_update`)",
        "replaces the deployment's for that tenant only. An override is checked when it is saved",
        "(`tenants.models.validate_setting_overrides`): a name not in this list, or a value of another type, is",
        "refused with a message naming the setting. A setting whose deployment value may name code to import",
        '(`"package.module:factory"`) takes only names the deployment offers from a tenant.',
        "",
        "| Setting | Deployment default | A tenant may set |",
        "|---|---|---|",
    ]
    for name in overridable:
        variable = variables[name]
        rule = _override_rule(name, variable.first.kind, shares, code_naming)
        out.append(f"| `{name}` | {_default_cell(variable)} | {_cell(rule)} |")
    return "\n".join(out) + "\n"


def main(*, check: bool = False) -> int:
    """Write docs/configuration.md; with ``check``, only say whether it is up to date (1 when not)."""
    missing = undocumented_process_variables()
    if missing:
        raise SystemExit(f"Describe {', '.join(missing)} in docs/generate/configuration.py PROCESS_VARIABLES.")
    text = render()
    if check:
        current = OUTPUT.read_text() if OUTPUT.exists() else ""
        if current != text:
            print("docs/configuration.md is out of date: run `python -m docs.generate configuration`.")
            return 1
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0
