#!/usr/bin/env python3
"""Builds bench/agent/*.json.gz and bench/agent/SOURCES from recorded agent runs.

One-off: it reads the public repositories listed below from local git mirrors (bare clones,
`git clone --mirror https://github.com/<repo>`), at the commits pinned here, so that the files
it writes can be rebuilt and checked. Usage:

    python3 bench/agent/extract.py MIRROR_DIR

where MIRROR_DIR/<owner>+<name>/repo is the bare clone of each repository. The output keeps
each message as the harness recorded it (role, text, tool calls as name + JSON arguments);
nothing else of the trajectory files (costs, configs, replay data) is kept.

Split, by run, fixed here and never changed after the fit: a run is either fitted or held out.
- mini-swe-agent (Gemini 3 Pro on SWE-bench Verified, bash in the reply text, tool output as
  user messages in <returncode>/<output> tags): every 21st run in path order from the 500,
  alternating fit / held-out.
- SWE-agent (its own demonstration and test trajectories: function calling with
  str_replace_editor and bash tools, and the older text-command styles): the eight replays of
  the marshmallow-1867 task, pydicom-1458 and three CTF runs are held out (so no replay of a
  task is on both sides), the rest is fitted.
"""
import ast
import gzip
import json
import subprocess
import sys

MINI = ("gruckion/mini-swe-agent", "d12a71a", "swebench_results/20251118_gemini-3-pro-74pct/trajs/")
SWEA = ("SWE-agent/SWE-agent", "3ea751c0", "")
SWEA_HELD_OUT = ("marshmallow-1867", "pydicom-1458", "ctf/web/", "ctf/rev/", "ctf/crypto/katy")


def git(mirror, *args):
    return subprocess.run(["git", "--git-dir", mirror, *args], check=True,
                          capture_output=True).stdout


def full_commit(mirror, rev):
    return git(mirror, "rev-parse", rev).decode().strip()


def text_of(content):
    """The text of a message's content: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def calls_of(raw):
    """Tool calls as [{name, arguments}] from OpenAI-style calls (SWE-agent records them as a
    Python repr of the list)."""
    if not raw:
        return []
    if isinstance(raw, str):
        raw = ast.literal_eval(raw)
    out = []
    for c in raw:
        f = c.get("function", {})
        args = f.get("arguments", "")
        if not isinstance(args, str):
            args = json.dumps(args)
        out.append({"name": f.get("name", ""), "arguments": args})
    return out


def main(mirrors):
    sources = []
    # mini-swe-agent
    repo, rev, prefix = MINI
    mirror = f"{mirrors}/{repo.replace('/', '+')}/repo"
    commit = full_commit(mirror, rev)
    paths = sorted(p for p in git(mirror, "ls-tree", "-r", "--name-only", commit).decode().split("\n")
                   if p.startswith(prefix) and p.endswith(".traj.json"))
    convs = []
    for i, path in enumerate(paths[::21]):
        d = json.loads(git(mirror, "show", f"{commit}:{path}"))
        split = "fit" if i % 2 == 0 else "held-out"
        msgs = [{"role": m["role"], "content": text_of(m.get("content"))} for m in d["messages"]]
        run = path.split("/")[-1].removesuffix(".traj.json")
        convs.append({"run": run, "split": split, "messages": msgs})
        sources.append((repo, commit, path, split))
    write("mini-swe-agent", convs)
    # SWE-agent
    repo, rev, prefix = SWEA
    mirror = f"{mirrors}/{repo.replace('/', '+')}/repo"
    commit = full_commit(mirror, rev)
    paths = sorted(p for p in git(mirror, "ls-tree", "-r", "--name-only", commit).decode().split("\n")
                   if p.endswith(".traj"))
    convs = []
    for path in paths:
        d = json.loads(git(mirror, "show", f"{commit}:{path}"))
        split = "held-out" if any(k in path for k in SWEA_HELD_OUT) else "fit"
        msgs = []
        for m in d.get("history", []):
            msg = {"role": m["role"], "content": text_of(m.get("content"))}
            calls = calls_of(m.get("tool_calls"))
            if calls:
                msg["tool_calls"] = calls
            if m.get("message_type") == "observation":
                msg["observation"] = True
            msgs.append(msg)
        run = "/".join(path.split("/")[-2:]).removesuffix(".traj")
        convs.append({"run": run, "split": split, "messages": msgs})
        sources.append((repo, commit, path, split))
    write("swe-agent", convs)
    with open("bench/agent/SOURCES", "w") as f:
        f.write("# harness file <- repository, commit, path in it; split (fit / held-out)\n")
        for repo, commit, path, split in sources:
            f.write(f"https://github.com/{repo} {commit} {path} {split}\n")


def write(harness, convs):
    data = json.dumps({"harness": harness, "conversations": convs}, ensure_ascii=False,
                      separators=(",", ":")).encode()
    with gzip.GzipFile(f"bench/agent/{harness}.json.gz", "wb", 9, mtime=0) as f:
        f.write(data)
    print(harness, len(convs), "runs", len(data), "bytes", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1])
