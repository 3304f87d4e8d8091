"""docs/MAP.md holds the tree to account: every #include crosses only the lines its folder table
draws, and every equation row names a function that exists in its file and cites its paper and
equation (in the comment above it or in its body). Every line of the C code that cites an
equation or an algorithm names its paper. No two files of the program depend on each other, even
through others: a file depends on the file that defines a function or variable it names. Usage:
test_map.py SOURCE_ROOT"""
import os
import re
import subprocess
import sys

root = sys.argv[1]
failed = []


def fail(msg):
    print("FAIL:", msg)
    failed.append(msg)


def table(text, heading):
    """The rows of the first Markdown table after `heading`, as lists of cells."""
    part = text.split(heading, 1)[1]
    rows = []
    for line in part.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not set("".join(cells)) <= set("-: "):
                rows.append(cells)
        elif rows:
            break
    return rows[1:]  # without the header


def names(cell):
    return re.findall(r"`([^`]+)`", cell)


text = open(os.path.join(root, "docs/MAP.md")).read()
try:
    files = subprocess.check_output(["git", "-C", root, "ls-files"], stderr=subprocess.DEVNULL).decode().split()
except (OSError, subprocess.CalledProcessError):  # a copy of the tree without its history
    files = [os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs
             if not os.path.relpath(d, root).startswith(("build", ".git", "out", "data/meshes"))]
code = [f for f in files if f.endswith((".c", ".h"))]

# --- includes ------------------------------------------------------------------------------
rules = {}
for cells in table(text, "## Folders"):
    rules[names(cells[0])[0]] = set(names(cells[2]))
headers = {}
for f in files:
    if f.endswith(".h"):
        headers.setdefault(os.path.basename(f), set()).add(os.path.dirname(f))
headers.setdefault("csm_version.h", set()).add("core")  # generated into the build tree
crossings = 0
for f in code:
    folder = os.path.dirname(f)
    rule = rules.get(f, rules.get(folder))
    if rule is None:
        fail(f"{f}: its folder {folder}/ has no row in docs/MAP.md")
        continue
    for m in re.finditer(r'^#include "([^"]+)"', open(os.path.join(root, f)).read(), re.M):
        owners = headers.get(os.path.basename(m.group(1)))
        if not owners:
            fail(f"{f}: includes {m.group(1)}, which is no header of the tree")
            continue
        if folder in owners:
            continue  # a folder's own headers are always allowed
        if not owners & rule:
            fail(f"{f}: includes {m.group(1)} from {'/'.join(sorted(owners))}/, which docs/MAP.md does not allow")
        crossings += 1
print(f"ok: {len(code)} files, {crossings} includes across folders checked against the map")

# --- no cycle between files ----------------------------------------------------------------
def stripped(source):
    """The code without comments and string literals."""
    source = re.sub(r"/\*.*?\*/", " ", source, flags=re.S)
    source = re.sub(r"//[^\n]*", " ", source)
    return re.sub(r'"(\\.|[^"\\])*"', '""', source)


program = [f for f in code if f.endswith(".c") and not f.startswith(("tests/", "fuzz/", "docs/"))]
src = {f: stripped(open(os.path.join(root, f)).read()) for f in program}
owner, twice = {}, set()
for f, s in src.items():  # what each file defines for others: functions and variables not static
    for m in re.finditer(r"^(?!static\b)(?:const\s+)?[A-Za-z_][\w \*]*?\b(\w+)\s*(\([^;{]*?\)\s*\{|(\[[^\]]*\])*\s*=)",
                         s, re.M | re.S):
        name = m.group(1)
        if name in owner and owner[name] != f:
            twice.add(name)
        owner.setdefault(name, f)
uses = {f: sorted({owner[n] for n in set(re.findall(r"\b[A-Za-z_]\w*\b", s))
                   if n in owner and n not in twice and owner[n] != f}) for f, s in src.items()}
state, stack = {}, []


def visit(f):
    """Depth first; a file met again while it is on the stack closes a cycle."""
    state[f] = 1
    stack.append(f)
    for g in uses[f]:
        if state.get(g) == 1:
            fail("files depend on each other: " + " -> ".join(stack[stack.index(g):] + [g]))
        elif g not in state:
            visit(g)
    stack.pop()
    state[f] = 2


before = len(failed)
for f in sorted(src):
    if f not in state:
        visit(f)
if len(failed) == before:
    print(f"ok: no cycle among the dependencies of {len(src)} files ({sum(map(len, uses.values()))} edges)")

# --- parameters are read by name only where the config is assembled ---------------------------
by_name = [f"{f}:{n}" for f in program if not f.startswith("core/io/") and f != "core/registry.c"
           for n, line in enumerate(open(os.path.join(root, f)).read().split("\n"), 1) if "csm_cfg_value(" in line]
for where in by_name:
    fail(f"{where}: reads a plugin's parameter by its key outside core/io (read the parameter struct, the plugin's "
         "traits, or csm_cfg_field)")
if not by_name:
    print("ok: no parameter is read by its key outside core/io")

# --- equations ------------------------------------------------------------------------------
def region(source, function):
    """The comment block above a function's definition and its body."""
    lines = source.split("\n")
    for i, line in enumerate(lines):
        if re.match(r"^(static )?(inline )?[\w\s\*]*\b%s\(" % re.escape(function), line) and not line.rstrip().endswith(";"):
            start = i
            while start > 0 and (lines[start - 1].strip().startswith(("/*", "*")) or lines[start - 1].strip().endswith("*/")
                                 or lines[start - 1].startswith("   ")):
                start -= 1
            end = i
            while end < len(lines) and lines[end] != "}":
                end += 1
            return "\n".join(lines[start:end + 1])
    return None


rows = table(text, "## Equations")
for paper, equation, file_cell, function_cell in rows:
    path, function = names(file_cell)[0], names(function_cell)[0]
    full = os.path.join(root, path)
    if not os.path.exists(full):
        fail(f"{paper} {equation}: {path} does not exist")
        continue
    body = region(open(full).read(), function)
    if body is None:
        fail(f"{paper} {equation}: {path} defines no {function}")
        continue
    short = paper.split()[0]
    if short not in body and not (short == "Müller" and "Muller" in body):
        fail(f"{paper} {equation}: {path} {function} does not name {short}")
    if equation not in body:
        fail(f"{paper} {equation}: {path} {function} does not cite '{equation}'")
print(f"ok: {len(rows)} equations of the papers found where docs/MAP.md says")

# --- every citation names its paper ---------------------------------------------------------
papers = re.compile(r"Müller|Muller|Bender|Bargteil|Falkenstein|Jones|Bridson|Jacobson|Barill|Van Oosterom|Macklin|Bouaziz")
cite = re.compile(r"\b(Eqs?\.?|Algorithm)\s+\d")
bare = 0
for f in code:
    lines = open(os.path.join(root, f)).read().split("\n")
    for n, line in enumerate(lines, 1):
        if cite.search(line) and not papers.search(line) and not papers.search(lines[n - 2] if n > 1 else ""):
            fail(f"{f}:{n}: cites an equation without naming its paper: {line.strip()}")
            bare += 1
if not bare:
    print("ok: every equation cited in the C code names its paper")

# --- every equation cited names a paper of docs/REFERENCES.md, which lists it ---------------
refs = open(os.path.join(root, "docs", "REFERENCES.md")).read()
sections = {m.group(1): refs[m.end():refs.find("\n### ", m.end()) % (len(refs) + 1)]
            for m in re.finditer(r"^### (.+)$", refs, re.M)}
# the short names the code uses, as regular expressions, and the heading they belong to
aliases = [(r"Bargteil-Jones( 2014)?", "Bargteil-Jones 2014"), (r"Falkenstein( et al\.)?( 2017)?", "Falkenstein 2017"),
           (r"M(ü|u|ue)ller( et al\.)? 2005", "Müller 2005"), (r"Müller et al\. 2007", "Müller et al. 2007"),
           (r"Barill et al\. 2018", "Barill et al. 2018"), (r"Macklin et al\. 2016", "Macklin et al. 2016")]
cited = re.compile(r"\s*(Eqs?|Algorithm)\.? ?(\d+)(-(\d+))?")
listed = 0
for f in code:
    for n, line in enumerate(open(os.path.join(root, f)).read().split("\n"), 1):
        for pattern, heading in aliases:
            for m in re.finditer(pattern, line):
                c = cited.match(line[m.end():])
                if not c:
                    continue
                kind = "Algorithm" if c.group(1) == "Algorithm" else "Eq"
                first, last = int(c.group(2)), int(c.group(4) or c.group(2))
                text = sections.get(heading, "")
                numbers = set()
                for r in re.finditer(kind + r" (\d+)( (to|and) " + kind + r" (\d+))?", text):
                    lo, hi = int(r.group(1)), int(r.group(4) or r.group(1))
                    numbers.update(range(lo, hi + 1) if r.group(3) != "and" else (lo, hi))
                missing = [k for k in range(first, last + 1) if k not in numbers]
                if missing:
                    fail(f"{f}:{n}: {heading} {kind} {missing[0]} is not listed under its paper in docs/REFERENCES.md")
                listed += 1
if not failed:
    print(f"ok: the {listed} equation citations of the C code are listed in docs/REFERENCES.md")

# --- every file the README and the docs name is in the repository ---------------------------
# A name in backquotes or a link that looks like a path (a folder in it, or a source, config or
# text extension) must be a tracked file or folder, or a tracked file's name, or a file
# `make figures` writes; `data/meshes/` is unpacked from Debian at set-up.
tracked = set(files)
folders = {os.path.dirname(t) for t in tracked}
folders |= {os.path.dirname(d) for d in list(folders)}
basenames = {os.path.basename(t) for t in tracked} | {t[len("experiments/"):] for t in tracked if t.startswith("experiments/")}
made = open(os.path.join(root, "Makefile")).read()
named, absent = 0, 0
pages = ["README.md", "experiments/README.md"] + sorted(f for f in tracked if f.startswith("docs/") and f.endswith(".md"))
for doc in pages:
    for m in re.finditer(r"`([^`\s]+)`|\]\(([^)\s]+)\)", open(os.path.join(root, doc)).read()):
        p = (m.group(1) or m.group(2)).split("#")[0].rstrip(",.:;")
        if m.group(2) and not p.startswith("http"):  # a link: relative to its page
            named += 1
            if os.path.normpath(os.path.join(os.path.dirname(doc), p)) not in tracked | folders:
                fail(f"{doc} links to {p}, which is not in the repository")
                absent += 1
            continue
        if p.startswith(("http", "out/", "/", "$", "-", "LOG", "build", ".venv", "data/meshes")) or not re.match(r"^[\w./-]+$", p):
            continue
        if not re.search(r"/|\.(c|h|py|sh|yaml|md|txt|cmake|in)$", p) or p.endswith("/") and not p.strip("./"):
            continue
        named += 1
        rel = os.path.normpath(os.path.join(os.path.dirname(doc), p)) if doc.startswith("docs/") and "/" not in p else os.path.normpath(p)
        if rel in tracked or rel in folders or p in basenames or os.path.normpath(p) in folders or "$(OUT)/" + p in made:
            continue
        if p.endswith("/") or p.startswith("ns/"):
            continue  # a folder a run makes (.partial/), a unit
        fail(f"{doc} names {p}, which is not in the repository")
        absent += 1
if not absent:
    print(f"ok: the {named} paths the README and the docs name are in the repository")

if failed:
    sys.exit(f"\n{len(failed)} problem(s) with the map, the code or the docs")
