#!/usr/bin/env python3
"""Builds bench/agent/swebench-long.json.gz: 40 long recorded SWE-bench agent runs, converted
to OpenAI Chat Completions messages with tool calls, and adds their provenance to
bench/agent/SOURCES.

One-off: it reads the public repository gruckion/mini-swe-agent (Gemini 3 Pro on SWE-bench
Verified, 500 mini-swe-agent trajectories) from a local bare git mirror, at the commit pinned
here, so that the file it writes can be rebuilt and checked. Usage:

    python3 bench/agent/extract_long.py MIRROR_GIT_DIR

where MIRROR_GIT_DIR is a bare clone of https://github.com/gruckion/mini-swe-agent that holds
COMMIT. Only the recorded messages are kept; nothing else of the trajectory files (costs,
configs, model stats, the per-message "extra" field) and none of the repository's code.

Selection (pinned in RUNS, and re-checked against the mirror on every run):
- the 24 runs already used by extract.py (every 21st of the 500 in path order) are excluded;
- of the other 476, the 40 with the most model calls (assistant messages), ties broken by path
  order.
Split: the 40 sorted by path; even positions (0, 2, ...) "fit", odd positions "held-out".

Conversion. mini-swe-agent has no tool calling: the model writes its command in its reply, in
one ```bash fenced block, and the harness answers with the command's output as a user message
(<returncode>..</returncode> then <output>..</output>, or <warning>/<output_head>/
<elided_chars>/<output_tail> for long output; a timeout notice; or, for the submit command,
the submitted diff). The harness finds commands with the regex RE below (its own action_regex,
re.DOTALL) and runs a reply only if exactly one block matches. Each run becomes the messages a
function-calling harness with one `bash` tool would have recorded:
- system and the first user message (the task): {role, content} as recorded (a content given
  as a list of text blocks would be joined; none in this data).
- an assistant reply with exactly one match: {role: "assistant", content: the reply with the
  whole matched block removed, then stripped (null if nothing is left), tool_calls: [{id:
  "call_<k>", type: "function", function: {name: "bash", arguments: the JSON text of
  {"command": cmd} as JavaScript's JSON.stringify writes it (no spaces, non-ASCII kept)}}]}
  where cmd is the block's text stripped as the harness did (the regex leaves out the newline
  before the closing fence; .strip() as in the harness's parse_action; in this data the strip
  never changes anything) and k counts the run's calls from 1.
- the user message right after such a reply (the observation, whatever its form) becomes
  {role: "tool", tool_call_id: "call_<k>", content: the text exactly as recorded}.
- an assistant reply with zero or several matches stays {role: "assistant", content}; the
  harness's format-error answer after it stays {role: "user", content}.
- a final assistant call with no observation after it is kept as is.
- order of messages is unchanged; no message is dropped or added.
Checked: every tool message answers the call of the assistant message right before it.

Output is deterministic: JSON with separators (",", ":") and ensure_ascii=False, gzip level 9
with mtime=0. If the 40 runs do not fit in LIMIT bytes compressed, the fit and held-out runs
are written to swebench-long-fit.json.gz and swebench-long-held-out.json.gz instead.
"""
import gzip
import json
import os
import re
import subprocess
import sys

REPO = "gruckion/mini-swe-agent"
COMMIT = "d12a71affd95403b036b2bdbd827349b77bfffb9"
PREFIX = "swebench_results/20251118_gemini-3-pro-74pct/trajs/"
RE = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
LIMIT = 1_900_000
HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = "# swebench-long.json.gz (extract_long.py): 40 long runs, converted to OpenAI tool calls"

RUNS = [
    "django__django-11138",
    "django__django-12858",
    "django__django-13112",
    "django__django-14349",
    "django__django-14631",
    "django__django-15280",
    "django__django-15554",
    "django__django-15563",
    "django__django-15695",
    "django__django-16263",
    "django__django-16560",
    "django__django-16950",
    "matplotlib__matplotlib-23299",
    "matplotlib__matplotlib-24177",
    "matplotlib__matplotlib-25311",
    "matplotlib__matplotlib-25775",
    "matplotlib__matplotlib-26208",
    "psf__requests-1142",
    "pydata__xarray-4356",
    "pydata__xarray-4695",
    "pylint-dev__pylint-6528",
    "pytest-dev__pytest-5787",
    "pytest-dev__pytest-6197",
    "pytest-dev__pytest-7490",
    "scikit-learn__scikit-learn-12682",
    "sphinx-doc__sphinx-10673",
    "sphinx-doc__sphinx-8035",
    "sphinx-doc__sphinx-8265",
    "sphinx-doc__sphinx-8548",
    "sphinx-doc__sphinx-8593",
    "sphinx-doc__sphinx-9229",
    "sphinx-doc__sphinx-9258",
    "sympy__sympy-12489",
    "sympy__sympy-13031",
    "sympy__sympy-13091",
    "sympy__sympy-13757",
    "sympy__sympy-14248",
    "sympy__sympy-19040",
    "sympy__sympy-22080",
    "sympy__sympy-22456",
]


def git(mirror, *args):
    return subprocess.run(["git", "--git-dir", mirror, *args], check=True,
                          capture_output=True).stdout


def path_of(run):
    return f"{PREFIX}{run}/{run}.traj.json"


def text_of(content):
    """The text of a message's content: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def check_selection(mirror):
    """Recomputes the selection from the mirror and checks it is RUNS."""
    paths = sorted(p for p in git(mirror, "ls-tree", "-r", "--name-only", COMMIT).decode().split("\n")
                   if p.startswith(PREFIX) and p.endswith(".traj.json"))
    assert len(paths) == 500, len(paths)
    used = set(paths[::21])  # extract.py's runs
    calls = []
    for p in paths:
        if p in used:
            continue
        d = json.loads(git(mirror, "show", f"{COMMIT}:{p}"))
        calls.append((-sum(m["role"] == "assistant" for m in d["messages"]), p))
    picked = sorted(p for _, p in sorted(calls)[:40])
    assert picked == [path_of(r) for r in RUNS], "selection differs from RUNS"
    assert RUNS == sorted(RUNS, key=path_of)


def convert(messages, stats):
    out = []
    k = 0
    pending = None  # call id of the assistant message right before, if it made one
    for i, m in enumerate(messages):
        role, text = m["role"], m.get("content")
        if not isinstance(text, str):
            stats["list_content"] += 1
            text = text_of(text)
        if i < 2:
            assert role == ("system", "user")[i], (i, role)
            out.append({"role": role, "content": text})
            continue
        if role == "assistant":
            blocks = list(RE.finditer(text))
            if len(blocks) == 1:
                k += 1
                b = blocks[0]
                rest = (text[:b.start()] + text[b.end():]).strip()
                cmd = b.group(1).strip()
                if cmd != b.group(1):
                    stats["cmd_stripped"] += 1
                out.append({"role": "assistant", "content": rest or None, "tool_calls": [
                    {"id": f"call_{k}", "type": "function",
                     "function": {"name": "bash", "arguments": json.dumps(
                         {"command": cmd}, ensure_ascii=False, separators=(",", ":"))}}]})
                stats["calls"] += 1
                if not rest:
                    stats["null_content"] += 1
                pending = f"call_{k}"
            else:
                out.append({"role": "assistant", "content": text})
                stats["fallback_text"] += 1
                stats[f"fallback_{len(blocks)}_blocks"] += 1
                pending = None
        elif role == "user":
            if pending:
                out.append({"role": "tool", "tool_call_id": pending, "content": text})
                stats["tool"] += 1
                kind = ("returncode" if text.startswith("<returncode>") else
                        "timeout" if text.startswith("The last command") else "other")
                stats[f"obs_{kind}"] += 1
            else:
                out.append({"role": "user", "content": text})
                stats["user_after_text"] += 1
                if text.startswith("Please always provide EXACTLY ONE action"):
                    stats["format_error"] += 1
            pending = None
        else:
            raise ValueError(f"unexpected role {role}")
    if pending:
        stats["final_call_unanswered"] += 1
    validate(out)
    return out


def validate(msgs):
    for i, m in enumerate(msgs):
        if m["role"] == "tool":
            prev = msgs[i - 1]
            assert prev["role"] == "assistant" and prev.get("tool_calls"), i
            assert [c["id"] for c in prev["tool_calls"]] == [m["tool_call_id"]], i
        if m["role"] == "assistant" and m.get("tool_calls") and i + 1 < len(msgs):
            assert msgs[i + 1]["role"] == "tool", i


def write(name, convs):
    data = json.dumps({"harness": "mini-swe-agent", "format": "openai", "model": "gemini-3-pro",
                       "conversations": convs}, ensure_ascii=False, separators=(",", ":")).encode()
    with open(os.path.join(HERE, name), "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=raw, mtime=0) as f:
            f.write(data)
    size = os.path.getsize(os.path.join(HERE, name))
    print(f"{name}: {len(convs)} runs, {len(data)} bytes JSON, {size} bytes gzip", file=sys.stderr)
    return size


def update_sources(lines):
    """Appends HEADER and lines to SOURCES; drops an earlier copy of them first (idempotent)."""
    path = os.path.join(HERE, "SOURCES")
    with open(path) as f:
        old = f.read().split("\n")
    drop = set(lines) | {HEADER}
    kept = [l for l in old if l not in drop]
    while kept and kept[-1] == "":
        kept.pop()
    with open(path, "w") as f:
        f.write("\n".join(kept + [HEADER] + lines) + "\n")


def main(mirror):
    import collections
    assert git(mirror, "rev-parse", f"{COMMIT}^{{commit}}").decode().strip() == COMMIT
    check_selection(mirror)
    convs, sources, stats = [], [], collections.Counter()
    for i, run in enumerate(RUNS):
        path = path_of(run)
        d = json.loads(git(mirror, "show", f"{COMMIT}:{path}"))
        split = "fit" if i % 2 == 0 else "held-out"
        msgs = convert(d["messages"], stats)
        n = sum(m["role"] == "assistant" for m in msgs)
        chars = sum(len(m["content"] or "") + sum(len(c["function"]["arguments"])
                                                   for c in m.get("tool_calls", [])) for m in msgs)
        print(f"{run}\t{split}\t{n} calls\t{chars} chars\texit={d['info'].get('exit_status')}",
              file=sys.stderr)
        convs.append({"run": run, "split": split,
                      "source": {"repo": REPO, "commit": COMMIT, "path": path}, "messages": msgs})
        sources.append(f"https://github.com/{REPO} {COMMIT} {path} {split}")
    print(dict(sorted(stats.items())), file=sys.stderr)
    for stale in ("swebench-long.json.gz", "swebench-long-fit.json.gz",
                  "swebench-long-held-out.json.gz"):
        if os.path.exists(os.path.join(HERE, stale)):
            os.remove(os.path.join(HERE, stale))
    if write("swebench-long.json.gz", convs) >= LIMIT:
        os.remove(os.path.join(HERE, "swebench-long.json.gz"))
        for split in ("fit", "held-out"):
            size = write(f"swebench-long-{split}.json.gz", [c for c in convs if c["split"] == split])
            assert size < LIMIT, f"{split} does not fit in {LIMIT} bytes"
    update_sources(sources)


if __name__ == "__main__":
    main(sys.argv[1])
