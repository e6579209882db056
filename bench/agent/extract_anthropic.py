#!/usr/bin/env python3
"""Builds bench/agent/anthropic-sessions*.json.gz: real Claude Code sessions in the Anthropic
Messages format, for the recall benchmark, and appends their lines to bench/agent/SOURCES.

Source. Entire (https://entire.io) records the Claude Code sessions its developers run: on the
branch `entire/checkpoints/v1` of a repository that uses it, each checkpoint directory
`<xx>/<id>/<n>/` holds `full.jsonl`, the session's transcript as Claude Code itself wrote it (one
event per line). Entire's own public, MIT-licensed repositories entireio/cli (a Go CLI) and
entireio/git-sync (a Go git mirroring tool) carry that branch with the sessions of their
development (Claude Opus 4.5 / 4.6 / 4.7 / 4.8, Sonnet 4.5, and a "claude-fable-5" model). The
same session shows up in several checkpoints as it grows: one checkpoint per session id is taken
(the longest stored; snapshots lack files of 4 MiB and more). Picked: sessions with at least 60
model calls and 150,000 characters after conversion, distinct (no tool call id or long text
shared between two of them), smallest compressed size first until the two output files are
nearly full; from git-sync the eight smallest such ones. Entire redacted secrets before
committing (the string "REDACTED" in place of some high-entropy strings inside texts, tool
inputs and tool outputs; no ids or signatures in the sessions picked); that is kept as recorded.

One-off, deterministic: it reads a bare clone (`git clone --mirror`) of each repository from a
directory given on the command line, at the pinned commit:

    python3 bench/agent/extract_anthropic.py MIRROR_DIR

where MIRROR_DIR/<owner>+<name>/repo is the bare clone. Output JSON: separators (",", ":"),
ensure_ascii=False; gzip level 9 with mtime=0.

Conversion of a Claude Code transcript to Anthropic Messages:
- Only `user` / `assistant` events of the main chain count; sidechain events (`isSidechain`,
  sub-agents), `summary`, `system`, `progress`, `file-history-snapshot`, `attachment`,
  `queue-operation` ... events are skipped. The main chain is the `parentUuid` ancestry of the
  last user/assistant event before the first `compact_boundary`, in ancestry order (events of
  abandoned branches, e.g. after a rewind, are dropped), plus the tool-result events that hang
  off a side branch (Claude Code parents the result of each parallel call on that call). A compact boundary breaks the chain (its `parentUuid` is
  null: what follows is a new conversation that starts from a summary), so a session is cut at
  the first one: what is kept is the conversation exactly as the model saw it up to there.
- Assistant events that Claude Code wrote itself (`model` "<synthetic>", `isApiErrorMessage`:
  "No response requested.", API error notices) are no model call and are dropped.
- Claude Code writes one event per content block of a model response, all with the same
  `message.id`; these are merged into one assistant message, blocks in order (thinking, text,
  tool_use ...). When the tool results of a response's first tool calls were written between its
  blocks (tools started while it streamed), the blocks still go to the one assistant message and
  the results to the one user message after it.
- Consecutive user events (tool results, and a prompt typed while tools ran) are merged into one
  user message, its tool_result blocks first (the API wants them before any text); adjacent
  messages of the same role are merged, so roles alternate, starting with user.
- Whitespace-only text blocks of responses ("\n\n" that some responses start with, before
  their thinking block) are dropped: the API refuses them in a request. A response made only of
  one is dropped as a whole.
- Content blocks are kept as recorded, with their wire fields only: thinking {thinking,
  signature}, redacted_thinking {data}, text {text}, tool_use {id, name, input}, tool_result
  {tool_use_id, content (string or blocks), is_error}; other blocks (tool_reference blocks of
  ToolSearch results) as they are.
  Image blocks (base64 screenshots) become the text block "[image omitted]". Everything else of
  an event (uuid, timestamps, usage, model, stop_reason, cwd, toolUseResult ...) is dropped.
  A user message given as a string stays a string.
- Checked: every tool_use is answered by a tool_result in the very next user message and every
  tool_result answers a tool_use of the message before. Only a dangling final tool_use (session
  stopped while a tool ran) is dropped, and an empty final message with it. A session broken in
  the middle is cut before the break (reported on stderr).
- No system prompt: Claude Code does not log it, so `system` is absent.

Split by session: sorted by (repo, path), even positions fit, odd held-out. Written to
anthropic-sessions-fit.json.gz and anthropic-sessions-held-out.json.gz (each must stay under
1.9 MB; nothing is shortened: sessions are whole up to the cut described above).
"""
import gzip
import json
import subprocess
import sys

HARNESS = "claude-code"
LIMIT = 1_900_000

# (repo, commit of the branch entire/checkpoints/v1, license, [paths of full.jsonl]). The MIT
# LICENSE file (Copyright (c) 2026 Entire Inc.) is on the repositories' main branch: entireio/cli
# f446dcfc09fda981a5c373a5f47c54363761fa6e, entireio/git-sync 298c7f1f1be36eea6401f9cc61701549ecee2983.
SOURCES = [
    ("entireio/cli", "394f81fab87f71aa8938d91ff7a067c524ff344b", "MIT", [
        "00/c9e2351016/0/full.jsonl", "0e/053674f90a/0/full.jsonl", "13/340918e71b/0/full.jsonl",
        "18/b9cffdf43b/0/full.jsonl", "1e/364a51eda4/0/full.jsonl", "20/388d3a424a/0/full.jsonl",
        "29/b3ca43fc00/0/full.jsonl", "3b/ff9e85c79b/0/full.jsonl", "3d/ffd2ffdd52/0/full.jsonl",
        "48/415fae24d7/0/full.jsonl", "49/280afe3e31/1/full.jsonl", "4c/ff5845d5a2/0/full.jsonl",
        "53/ec1f81a59f/0/full.jsonl", "5a/fc89b34b6c/0/full.jsonl", "6d/123b9a5bc6/0/full.jsonl",
        "6d/63c3a51594/0/full.jsonl", "76/74489fb0a9/3/full.jsonl", "76/9ddf2969b6/1/full.jsonl",
        "77/44ff0ccd17/0/full.jsonl", "77/8aa463e2ba/0/full.jsonl", "81/de29e2290e/0/full.jsonl",
        "86/9d11344fce/1/full.jsonl", "90/ed5b9b296e/1/full.jsonl", "9b/04c3d92e38/4/full.jsonl",
        "bb/781d6f3a8e/0/full.jsonl", "bd/7375936c5c/0/full.jsonl", "c7/f7b48fb868/0/full.jsonl",
        "c8/65e23c3009/0/full.jsonl", "d4/1769f480b6/0/full.jsonl", "d8/7ee3bab4de/0/full.jsonl",
        "d9/7f777d07d9/0/full.jsonl", "e2/6858f99834/0/full.jsonl", "f6/a415abf2b0/1/full.jsonl",
        "fc/99c919b212/0/full.jsonl",
    ]),
    ("entireio/git-sync", "8e24a4e9214edf84e753675e5c3ebe0f60e15264", "MIT", [
        "00/2f876fb8bb/1/full.jsonl", "1d/d678f9643b/0/full.jsonl", "71/872426c9cd/0/full.jsonl",
        "74/fd06e0aef8/0/full.jsonl", "a9/98a8395fc4/0/full.jsonl", "b5/b72cefafb3/2/full.jsonl",
        "d7/d18da5063a/0/full.jsonl", "fb/4821afd3f1/0/full.jsonl",
    ]),
]

KEEP = {
    "thinking": ("type", "thinking", "signature"),
    "redacted_thinking": ("type", "data"),
    "text": ("type", "text"),
    "tool_use": ("type", "id", "name", "input"),
    "tool_result": ("type", "tool_use_id", "content", "is_error"),
}


def git(mirror, *args):
    return subprocess.run(["git", "--git-dir", mirror, *args], check=True,
                          capture_output=True).stdout


def clean_block(b):
    if isinstance(b, str):
        return {"type": "text", "text": b}
    t = b.get("type")
    if t == "image" or t == "document":
        return {"type": "text", "text": f"[{t} omitted]"}
    if t == "tool_result":
        out = {k: b[k] for k in KEEP[t] if k in b}
        c = b.get("content")
        if isinstance(c, list):
            out["content"] = [clean_block(x) for x in c]
        return out
    if t in KEEP:
        return {k: b[k] for k in KEEP[t] if k in b}
    return {k: v for k, v in b.items() if k != "cache_control"}


def main_chain(events):
    """The user/assistant events of the main chain up to the first compact boundary: the
    parentUuid ancestry of the last one, in that order, plus the tool results of its tool calls
    (Claude Code hangs the results of parallel calls off each call, so all but one of them are
    on side branches of that ancestry; such a side line is taken when all its tool results
    answer calls of the ancestry not answered yet, with any text typed along with them; it is
    put right after the event with the call)."""
    by_uuid = {}
    order = []
    leaf = None
    compacted = False
    for e in events:
        if e.get("isSidechain"):
            continue
        if e.get("type") == "system" and e.get("subtype") == "compact_boundary":
            compacted = True
            break
        u = e.get("uuid")
        if u and u not in by_uuid:
            by_uuid[u] = e
            if e.get("type") in ("user", "assistant") and isinstance(e.get("message"), dict):
                order.append(u)
                leaf = u
    path = []  # the ancestry, root first (file order can put a result before its call)
    seen = set()
    while leaf and leaf in by_uuid and leaf not in seen:
        seen.add(leaf)
        path.append(leaf)
        leaf = by_uuid[leaf].get("parentUuid")
    path.reverse()
    active = [by_uuid[u] for u in path
              if by_uuid[u].get("type") in ("user", "assistant")
              and isinstance(by_uuid[u].get("message"), dict)]
    in_active = {e["uuid"] for e in active}
    call_at = {}
    answered = set()
    for i, e in enumerate(active):
        for b in content_list(e):
            if b.get("type") == "tool_use":
                call_at[b.get("id")] = i
            elif b.get("type") == "tool_result":
                answered.add(b.get("tool_use_id"))
    after = [[] for _ in active]
    for u in order:
        e = by_uuid[u]
        if u in in_active or e["type"] != "user":
            continue
        ids = [b.get("tool_use_id") for b in content_list(e) if b.get("type") == "tool_result"]
        if ids and all(i in call_at and i not in answered for i in ids):
            answered.update(ids)
            after[max(call_at[i] for i in ids)].append(e)
    chain = []
    for e, side in zip(active, after):
        chain.append(e)
        chain.extend(side)
    return chain, compacted


def content_list(e):
    c = e["message"].get("content")
    return [b for b in c if isinstance(b, dict)] if isinstance(c, list) else []


def convert(events):
    chain, compacted = main_chain(events)
    msgs = []  # {"role", "content", "_id"}
    last_asst = None  # index of the last assistant message in msgs
    for e in chain:
        m = e["message"]
        role = m.get("role") or e["type"]
        if role == "assistant":
            if m.get("model") == "<synthetic>" or e.get("isApiErrorMessage"):
                continue
            blocks = [clean_block(b) for b in (m.get("content") or [])]
            # the API refuses whitespace-only text blocks ("\n\n" before a thinking block)
            blocks = [b for b in blocks if b.get("type") != "text" or b.get("text", "").strip()]
            if not blocks:
                continue
            mid = m.get("id")
            if (last_asst is not None and mid and msgs[last_asst]["_id"] == mid
                    and all(b.get("type") == "tool_result" for x in msgs[last_asst + 1:]
                            for b in x["content"] if isinstance(x["content"], list))
                    and all(isinstance(x["content"], list) for x in msgs[last_asst + 1:])):
                msgs[last_asst]["content"].extend(blocks)
                continue
            if msgs and msgs[-1]["role"] == "assistant":
                msgs[-1]["content"].extend(blocks)
                msgs[-1]["_id"] = mid
                last_asst = len(msgs) - 1
                continue
            msgs.append({"role": "assistant", "content": blocks, "_id": mid})
            last_asst = len(msgs) - 1
        else:
            c = m.get("content")
            if isinstance(c, list):
                c = [clean_block(b) for b in c]
                if not c:
                    continue
            elif not isinstance(c, str) or not c:
                continue
            if msgs and msgs[-1]["role"] == "user":
                prev = msgs[-1]["content"]
                if isinstance(prev, str):
                    prev = [{"type": "text", "text": prev}]
                if isinstance(c, str):
                    c = [{"type": "text", "text": c}]
                msgs[-1]["content"] = prev + c
                continue
            msgs.append({"role": "user", "content": c, "_id": None})
    # Tool results of one response first in the user message (the API wants them before text)
    for x in msgs:
        if x["role"] == "user" and isinstance(x["content"], list):
            res = [b for b in x["content"] if b.get("type") == "tool_result"]
            if res:
                x["content"] = res + [b for b in x["content"] if b.get("type") != "tool_result"]
    while msgs and msgs[0]["role"] != "user":
        msgs.pop(0)
    cut = None
    for i, x in enumerate(msgs):
        if x["role"] != "assistant":
            continue
        uses = [b["id"] for b in x["content"] if b.get("type") == "tool_use"]
        nxt = msgs[i + 1] if i + 1 < len(msgs) else None
        if nxt is None:
            if uses:  # dangling final tool_use
                x["content"] = [b for b in x["content"] if b.get("type") != "tool_use"]
                if not x["content"]:
                    msgs.pop()
            break
        res = ([b.get("tool_use_id") for b in nxt["content"] if b.get("type") == "tool_result"]
               if isinstance(nxt["content"], list) else [])
        if len(set(uses)) != len(uses) or sorted(uses) != sorted(res):
            cut = i
            break
    if cut is not None:
        msgs = msgs[:cut]
        while msgs and msgs[-1]["role"] != "assistant":
            msgs.pop()
    # the first user message must not carry tool results
    if msgs and isinstance(msgs[0]["content"], list) and any(
            b.get("type") == "tool_result" for b in msgs[0]["content"]):
        cut = 0
        msgs = []
    for x in msgs:
        del x["_id"]
    return msgs, compacted, cut


def stats(msgs):
    calls = sum(1 for m in msgs if m["role"] == "assistant")
    chars = len(json.dumps(msgs, ensure_ascii=False))
    thinking = parallel = 0
    largest = 0
    for m in msgs:
        if not isinstance(m["content"], list):
            continue
        if m["role"] == "assistant":
            thinking += sum(1 for b in m["content"] if b.get("type") == "thinking")
            parallel += sum(1 for b in m["content"] if b.get("type") == "tool_use") > 1
        for b in m["content"]:
            if b.get("type") == "tool_result":
                c = b.get("content")
                n = len(c) if isinstance(c, str) else len(json.dumps(c, ensure_ascii=False))
                largest = max(largest, n)
    return {"calls": calls, "chars": chars, "thinking": thinking, "parallel": parallel,
            "largest_result": largest}


def load(mirrors, repo, commit, path):
    mirror = f"{mirrors}/{repo.replace('/', '+')}/repo"
    raw = git(mirror, "show", f"{commit}:{path}").decode("utf-8")
    events = []
    dec = json.JSONDecoder()
    for line in raw.splitlines():
        # a line can hold two events written without a newline between them
        pos, line = 0, line.strip()
        while pos < len(line):
            e, pos = dec.raw_decode(line, pos)
            events.append(e)
            while pos < len(line) and line[pos].isspace():
                pos += 1
    return events


def model_of(events):
    """The model that made most of the session's responses (the keeper's counting follows it:
    Claude models differ in whether earlier thinking stays in context)."""
    models = {}
    for e in events:
        m = e.get("message") if e.get("type") == "assistant" else None
        name = m.get("model") if isinstance(m, dict) else None
        if name and name != "<synthetic>":
            models[name] = models.get(name, 0) + 1
    return max(sorted(models), key=lambda k: models[k]) if models else None


def main(mirrors):
    items = []
    for repo, commit, lic, paths in SOURCES:
        for path in paths:
            items.append((repo, path, commit, lic))
    items.sort(key=lambda t: (t[0], t[1]))
    convs = {"fit": [], "held-out": []}
    sources = []
    for i, (repo, path, commit, lic) in enumerate(items):
        split = "fit" if i % 2 == 0 else "held-out"
        events = load(mirrors, repo, commit, path)
        msgs, compacted, cut = convert(events)
        sid = next((e["sessionId"] for e in events if e.get("sessionId")), path)
        if cut is not None:
            print(f"{path}: chain broken at message {cut}, cut there", file=sys.stderr)
        s = stats(msgs)
        print(f"{split}\t{path}\t{sid}\t{s['calls']} calls\t{s['chars']} chars\t"
              f"{s['thinking']} thinking\t{s['parallel']} parallel\t"
              f"largest result {s['largest_result']}\t{'cut at compaction' if compacted else ''}",
              file=sys.stderr)
        convs[split].append({"run": sid, "split": split, "model": model_of(events),
                             "source": {"repo": repo, "commit": commit, "path": path,
                                        "license": lic},
                             "messages": msgs})
        sources.append((repo, commit, path, split))
    for split, cs in convs.items():
        data = json.dumps({"harness": HARNESS, "format": "anthropic", "conversations": cs},
                          ensure_ascii=False, separators=(",", ":")).encode()
        name = f"bench/agent/anthropic-sessions-{split}.json.gz"
        with open(name, "wb") as raw:
            with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0,
                               filename="") as f:
                f.write(data)
        size = len(open(name, "rb").read())
        print(f"{name}: {len(cs)} sessions, {len(data)} bytes, {size} gzipped", file=sys.stderr)
        assert size < LIMIT, name
    lics = sorted({lic for _, _, lic, _ in SOURCES})
    header = f"# anthropic-sessions (extract_anthropic.py): {HARNESS}, {', '.join(lics)}\n"
    with open("bench/agent/SOURCES") as f:
        old = f.read()
    if header in old:  # rerun: replace our own block
        old = old[:old.index(header)]
    with open("bench/agent/SOURCES", "w") as f:
        f.write(old + header)
        for repo, commit, path, split in sources:
            f.write(f"https://github.com/{repo} {commit} {path} {split}\n")


if __name__ == "__main__":
    main(sys.argv[1])
