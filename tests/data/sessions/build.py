#!/usr/bin/env python3
"""Builds the 300-turn agent session fixtures (tests/data/sessions/agent-300.*.json.gz) from
recorded agent runs. Standard library only; deterministic: the same source.json.gz gives the same
bytes (gzip level 9, no name, mtime 0, with the same zlib).

    python3 tests/data/sessions/build.py                  # source.json.gz -> the four fixtures
    python3 tests/data/sessions/build.py --check          # the fixtures are what it would write?
    python3 tests/data/sessions/build.py --extract GITDIR  # GITDIR: a bare clone of
        # https://github.com/gruckion/mini-swe-agent -> source.json.gz and SOURCES, then the fixtures

The session is six real runs of mini-swe-agent (Gemini 3 Pro Preview on SWE-bench Verified: four
in django, then two in pylint), chained as one working session in which the user asks for task
after task (see README.md). Every assistant text, reasoning text, command and command
output is the recorded one. What this script adds: the "Next task:" framing of the chained tasks
(the text after it is the run's own <pr_description>), tool-call ids, four small PNG images
standing for screenshots, fake thinking signatures, and the mapping of commands onto tools:

- each ```bash block of a reply is one tool call; a reply with several blocks is several parallel
  calls, which the harness rejected (the recorded rejection is each call's error result);
- `cat FILE`, `sed -n 'A,Bp' FILE` and `nl -ba FILE | sed -n 'A,Bp'` become read_file {path,
  offset?, limit?}; `cat <<'EOF' > FILE ... EOF` becomes write_file {path, content}; a literal
  `sed -i '[N]s/OLD/NEW/[g]' FILE` becomes edit_file {path, old_string, new_string,
  replace_all?}; anything else stays bash {command} (a leading `cd /testbed && ` is dropped
  from mapped commands only);
- the reply text is the recorded reply without its "THOUGHT:" label and its bash blocks; the
  reasoning is the reasoning text the provider recorded for the reply, or else a THOUGHT of
  THINK_AT characters or more moved from text to reasoning (see THINK_AT);
- tool results are the harness's observation text, unchanged (its <returncode>/<output> tags too).
"""
import base64
import gzip
import hashlib
import io
import json
import os
import re
import struct
import subprocess
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = "gruckion/mini-swe-agent"
COMMIT = "d12a71affd95403b036b2bdbd827349b77bfffb9"
TRAJS = "swebench_results/20251118_gemini-3-pro-74pct/trajs/"
# 313 replies in all. Picked for their long real outputs (no run of this set is longer than 145
# replies, and only these have tool outputs of 20,000+ characters, in django and pylint): the
# 151,582-character final `git diff --cached` of django-15629, the 64,372-character test log of
# django-15957, and two timed-out `pylint --recursive=y` logs of pylint-6528 (41,623 and 25,425);
# pylint-7080's own request is 29,525 characters (a pasted log). django-15741 and -15863 fill the
# session up to ~300 replies.
RUNS = ["django__django-15629", "django__django-15741", "django__django-15863",
        "django__django-15957", "pylint-dev__pylint-6528", "pylint-dev__pylint-7080"]
NAME = "agent-300"
ANTHROPIC_MODEL = "claude-sonnet-4-5"


# ---------------------------------------------------------------- extraction (one-off)

def extract(gitdir):
    """Writes source.json.gz (the runs' messages: role, content, and the reasoning text the
    provider returned with a reply, if any) and SOURCES from a bare clone at COMMIT."""
    runs, sources = [], []
    for run in RUNS:
        path = f"{TRAJS}{run}/{run}.traj.json"
        raw = subprocess.run(["git", "--git-dir", gitdir, "show", f"{COMMIT}:{path}"],
                             check=True, capture_output=True).stdout
        d = json.loads(raw)
        msgs = []
        for m in d["messages"]:
            assert isinstance(m["content"], str)
            msg = {"role": m["role"], "content": m["content"]}
            if m["role"] == "assistant":
                choice = m["extra"]["response"]["choices"][0]["message"]
                if choice.get("reasoning"):
                    msg["reasoning"] = choice["reasoning"]
            msgs.append(msg)
        runs.append({"run": run, "path": path,
                     "exit_status": d["info"]["exit_status"], "messages": msgs})
        sources.append((path, hashlib.sha256(raw).hexdigest()))
    data = json.dumps({"harness": "mini-swe-agent", "repository": f"https://github.com/{REPO}",
                       "commit": COMMIT, "runs": runs}, ensure_ascii=False,
                      separators=(",", ":")).encode()
    with open(os.path.join(HERE, "source.json.gz"), "wb") as f:
        f.write(gz(data))
    with open(os.path.join(HERE, "SOURCES"), "w") as f:
        f.write("# source.json.gz <- repository, commit, path in it, sha256 of the file at that commit\n")
        f.write("# (messages kept: role, content; for replies, choices[0].message.reasoning when present)\n")
        for path, digest in sources:
            f.write(f"https://github.com/{REPO} {COMMIT} {path} {digest}\n")
        f.write("# No output is concatenated or edited: each long result (151,582, 64,372, 41,623 and 25,425\n")
        f.write("# characters) is one real observation of its run.\n")


def gz(data):
    """`data` gzipped the same way every time: level 9, no file name, mtime 0. (GzipFile rather
    than gzip.compress, whose header differs between Python versions.)"""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9, mtime=0, filename="") as f:
        f.write(data)
    return out.getvalue()


# ---------------------------------------------------------------- deterministic additions

def digest(*parts):
    return hashlib.sha256("\x00".join(parts).encode()).digest()


B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def b62(seed, n):
    out, block, i = [], b"", 0
    while len(out) < n:
        block = digest(seed, str(i))
        i += 1
        out.extend(B62[b % 62] for b in block if b < 248)
    return "".join(out[:n])


def call_ids(seed):
    """(OpenAI-style id, Anthropic-style id) for one tool call."""
    return "call_" + b62("openai" + seed, 24), "toolu_01" + b62("anthropic" + seed, 22)


def fake_signature(thinking):
    """A deterministic stand-in for an Anthropic thinking signature: base64 of hash-chained bytes,
    its length growing with the thinking text like real ones (a few hundred to ~2,000 chars).
    It is not a real signature: the API would reject it."""
    n = min(1500, 240 + len(thinking) // 3)
    raw, i = b"", 0
    while len(raw) < n:
        raw += digest("signature", thinking, str(i))
        i += 1
    return base64.b64encode(b"\x12\x0c" + raw[:n]).decode()


def png(width, height, seed):
    """A small RGB PNG (a gradient with a few bands, like a cropped screenshot), from zlib."""
    h = digest("png", seed)
    rows = []
    for y in range(height):
        row = bytearray([0])  # filter: none
        for x in range(width):
            band = (y * 4 // max(1, height)) % 4
            row += bytes(((h[band] + x * 5) % 256, (h[band + 4] + y * 3) % 256, h[band + 8]))
        rows.append(bytes(row))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + chunk(b"IEND", b"")
    return base64.b64encode(data).decode()


# Which chained tasks carry a screenshot in their "Next task" message (index into RUNS), its size,
# and the sentence that introduces it (the only user text added besides "Next task:").
IMAGES = {1: (16, 16), 2: (64, 40), 4: (32, 24), 5: (48, 32)}
IMAGE_NOTE = "Screenshot attached."


# ---------------------------------------------------------------- commands -> tools

# Reasoning: the provider returned the model's reasoning text for only a few replies (the first
# one or two of each run); those replies keep it as reasoning and their THOUGHT as text. Of the
# others, a THOUGHT of THINK_AT or more characters (a long deliberation) becomes the reasoning and
# the reply has no text; shorter ones stay text. So about a quarter of the replies think.
THINK_AT = 1000
BASH_BLOCK = re.compile(r"```bash[ \t]*\n(.*?)\n```", re.S)
CD = re.compile(r"^cd /testbed\s*&&\s*")
PATH = r"([\w./-]+)"
CAT = re.compile(rf"^cat {PATH}$")
SED_N = re.compile(rf"^sed -n '(\d+),(\d+)p' {PATH}$")
NL_SED = re.compile(rf"^nl -ba {PATH} \| sed -n '(\d+),(\d+)p'$")
HEREDOC = re.compile(rf"^cat <<'?(\w+)'? > {PATH}\n(.*)\n\1$", re.S)
SED_I = (re.compile(rf"^sed -i '(?:\d+)?s/([^/\\']+)/([^/\\']*)/(g?)' {PATH}$"),
         re.compile(rf'^sed -i "(?:\d+)?s/([^/\\"$`!]+)/([^/\\"$`!]*)/(g?)" {PATH}$'))
# Special in a sed basic regex (the pattern) and in its replacement; a "." is taken as meant
# literally (as in `cur_model._meta`).
BRE_SPECIAL = re.compile(r"[*\[\]^$]")


def tool_of(command):
    """(tool name, input) for one recorded command. The mapping reads the command only: a call
    keeps its recorded result whatever it was (a failed `cat` is a failed read_file)."""
    cmd = CD.sub("", command.strip())
    if "\n" not in cmd:
        if m := CAT.match(cmd):
            return "read_file", {"path": m[1]}
        if m := SED_N.match(cmd):
            a, b = int(m[1]), int(m[2])
            return "read_file", {"path": m[3], "offset": a, "limit": b - a + 1}
        if m := NL_SED.match(cmd):
            a, b = int(m[2]), int(m[3])
            return "read_file", {"path": m[1], "offset": a, "limit": b - a + 1}
        for sed in SED_I:
            if (m := sed.match(cmd)) and not BRE_SPECIAL.search(m[1]) and "&" not in m[2]:
                args = {"path": m[4], "old_string": m[1], "new_string": m[2]}
                if m[3]:
                    args["replace_all"] = True
                return "edit_file", args
    if m := HEREDOC.match(cmd):
        return "write_file", {"path": m[2], "content": m[3] + "\n"}
    return "bash", {"command": command}


def reply_text(content):
    text = BASH_BLOCK.sub("", content)
    text = re.sub(r"^\s*THOUGHT:\s*", "", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


# ---------------------------------------------------------------- the neutral session

def session(src):
    """The session as neutral events: system, user (text, images), and assistant steps (reasoning,
    text, calls [{name, input, ids}], results [{text, error}])."""
    events = []
    for k, run in enumerate(src["runs"]):
        msgs = run["messages"]
        assert msgs[0]["role"] == "system" and msgs[1]["role"] == "user"
        if k == 0:
            events.append({"kind": "system", "text": msgs[0]["content"]})
            events.append({"kind": "user", "text": msgs[1]["content"], "images": []})
        else:
            assert msgs[0]["content"] == src["runs"][0]["messages"][0]["content"]
            pr = re.search(r"<pr_description>\n(.*?)</pr_description>", msgs[1]["content"], re.S)[1]
            pr = pr.removeprefix("Consider the following PR description:\n").strip()
            text = f"Next task: {pr}"
            images = []
            if k in IMAGES:
                w, h = IMAGES[k]
                images.append(png(w, h, run["run"]))
                text += "\n\n" + IMAGE_NOTE
            events.append({"kind": "user", "text": text, "images": images})
        i = 2
        while i < len(msgs):
            reply = msgs[i]
            assert reply["role"] == "assistant", (run["run"], i)
            obs = msgs[i + 1]["content"]
            assert msgs[i + 1]["role"] == "user"
            blocks = BASH_BLOCK.findall(reply["content"])
            assert blocks, (run["run"], i)
            rejected = len(blocks) > 1
            calls, results = [], []
            for j, command in enumerate(blocks):
                name, args = tool_of(command)
                oid, aid = call_ids(f"{run['run']}/{i}/{j}")
                calls.append({"name": name, "input": args, "openai_id": oid, "anthropic_id": aid})
                results.append({"text": obs, "error": rejected})
            reasoning, text = reply.get("reasoning"), reply_text(reply["content"])
            if not reasoning and len(text) >= THINK_AT:
                reasoning, text = text, ""
            events.append({"kind": "step", "reasoning": reasoning, "text": text,
                           "calls": calls, "results": results})
            i += 2
    return events


# ---------------------------------------------------------------- the four formats

def openai(events):
    out = []
    for e in events:
        if e["kind"] == "system":
            out.append({"role": "system", "content": e["text"]})
        elif e["kind"] == "user":
            if e["images"]:
                parts = [{"type": "text", "text": e["text"]}]
                parts += [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{d}"}} for d in e["images"]]
                out.append({"role": "user", "content": parts})
            else:
                out.append({"role": "user", "content": e["text"]})
        else:
            # Chat Completions has no reasoning in messages: the reasoning text is left out.
            out.append({"role": "assistant", "content": e["text"] or None, "tool_calls": [
                {"id": c["openai_id"], "type": "function",
                 "function": {"name": c["name"], "arguments": json.dumps(c["input"], ensure_ascii=False)}}
                for c in e["calls"]]})
            for c, r in zip(e["calls"], e["results"]):
                out.append({"role": "tool", "tool_call_id": c["openai_id"], "content": r["text"]})
    return out


def anthropic(events):
    system, messages = None, []
    for e in events:
        if e["kind"] == "system":
            system = e["text"]
        elif e["kind"] == "user":
            parts = [{"type": "text", "text": e["text"]}]
            parts += [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": d}} for d in e["images"]]
            # Tool results and the next request share one user turn (roles alternate).
            if messages and messages[-1]["role"] == "user":
                messages[-1]["content"].extend(parts)
            else:
                messages.append({"role": "user", "content": parts})
        else:
            content = []
            if e["reasoning"]:
                content.append({"type": "thinking", "thinking": e["reasoning"], "signature": fake_signature(e["reasoning"])})
            if e["text"]:
                content.append({"type": "text", "text": e["text"]})
            content += [{"type": "tool_use", "id": c["anthropic_id"], "name": c["name"], "input": c["input"]} for c in e["calls"]]
            messages.append({"role": "assistant", "content": content})
            results = []
            for c, r in zip(e["calls"], e["results"]):
                block = {"type": "tool_result", "tool_use_id": c["anthropic_id"], "content": r["text"]}
                if r["error"]:
                    block["is_error"] = True
                results.append(block)
            messages.append({"role": "user", "content": results})
    return {"model": ANTHROPIC_MODEL, "max_tokens": 32000, "system": system, "messages": messages}


def aisdk(events):
    out = []
    for e in events:
        if e["kind"] == "system":
            out.append({"role": "system", "content": e["text"]})
        elif e["kind"] == "user":
            parts = [{"type": "text", "text": e["text"]}]
            parts += [{"type": "image", "image": d, "mediaType": "image/png"} for d in e["images"]]
            out.append({"role": "user", "content": parts})
        else:
            content = []
            if e["reasoning"]:
                content.append({"type": "reasoning", "text": e["reasoning"],
                                "providerOptions": {"anthropic": {"signature": fake_signature(e["reasoning"])}}})
            if e["text"]:
                content.append({"type": "text", "text": e["text"]})
            content += [{"type": "tool-call", "toolCallId": c["anthropic_id"], "toolName": c["name"], "input": c["input"]}
                        for c in e["calls"]]
            out.append({"role": "assistant", "content": content})
            out.append({"role": "tool", "content": [
                {"type": "tool-result", "toolCallId": c["anthropic_id"], "toolName": c["name"],
                 "output": {"type": "error-text" if r["error"] else "text", "value": r["text"]}}
                for c, r in zip(e["calls"], e["results"])]})
    return out


def ui(events):
    """UIMessages as useChat keeps them: one assistant message per request, a step-start part
    before each step."""
    out, n = [], 0

    def next_id(prefix):
        nonlocal n
        n += 1
        return f"{prefix}-{b62('ui' + str(n), 16)}"

    for e in events:
        if e["kind"] == "system":
            out.append({"id": next_id("sys"), "role": "system", "parts": [{"type": "text", "text": e["text"]}]})
        elif e["kind"] == "user":
            parts = [{"type": "text", "text": e["text"]}]
            parts += [{"type": "file", "mediaType": "image/png", "filename": f"screenshot-{k + 1}.png",
                       "url": f"data:image/png;base64,{d}"} for k, d in enumerate(e["images"])]
            out.append({"id": next_id("msg"), "role": "user", "parts": parts})
        else:
            if out[-1]["role"] != "assistant":
                out.append({"id": next_id("msg"), "role": "assistant", "parts": []})
            parts = out[-1]["parts"]
            parts.append({"type": "step-start"})
            if e["reasoning"]:
                parts.append({"type": "reasoning", "text": e["reasoning"], "state": "done",
                              "providerMetadata": {"anthropic": {"signature": fake_signature(e["reasoning"])}}})
            if e["text"]:
                parts.append({"type": "text", "text": e["text"], "state": "done"})
            for c, r in zip(e["calls"], e["results"]):
                part = {"type": f"tool-{c['name']}", "toolCallId": c["anthropic_id"]}
                if r["error"]:
                    part.update({"state": "output-error", "input": c["input"], "errorText": r["text"]})
                else:
                    part.update({"state": "output-available", "input": c["input"], "output": r["text"]})
                parts.append(part)
    return out


def dump(value):
    """One message a line (diffable once unzipped, and no indentation bytes), as UTF-8."""
    if isinstance(value, list):
        body = "[\n" + ",\n".join(json.dumps(m, ensure_ascii=False) for m in value) + "\n]\n"
    else:
        head = {k: v for k, v in value.items() if k != "messages"}
        body = json.dumps(head, ensure_ascii=False)[:-1] + ', "messages": [\n'
        body += ",\n".join(json.dumps(m, ensure_ascii=False) for m in value["messages"]) + "\n]}\n"
    assert json.loads(body) == value
    return body.encode()


def check(path, data, packed):
    """Whether the fixture at `path` is `packed` (its gzip bytes), or at least holds `data`."""
    name = os.path.basename(path)
    try:
        with open(path, "rb") as f:
            stored = f.read()
    except FileNotFoundError:
        print(f"{name}: missing", file=sys.stderr)
        return False
    if stored == packed:
        return True
    if gzip.decompress(stored) == data:
        # NOTE: another zlib (zlib-ng, a newer release) may pack the same JSON into other
        # bytes; the fixture's content is what the tests read, so that is not a failure.
        print(f"{name}: same JSON, other gzip bytes (zlib {zlib.ZLIB_RUNTIME_VERSION} here)", file=sys.stderr)
        return True
    print(f"{name}: differs from what build.py writes", file=sys.stderr)
    return False


def main(argv):
    checking = argv[1:] == ["--check"]
    if len(argv) >= 3 and argv[1] == "--extract":
        extract(argv[2])
    elif len(argv) > 1 and not checking:
        sys.exit(f"usage: {argv[0]} [--check | --extract GITDIR]")
    with gzip.open(os.path.join(HERE, "source.json.gz")) as f:
        src = json.load(f)
    assert src["commit"] == COMMIT and [r["run"] for r in src["runs"]] == RUNS
    events = session(src)
    steps = [e for e in events if e["kind"] == "step"]
    ok = True
    for fmt, build in (("openai", openai), ("anthropic", anthropic), ("aisdk", aisdk), ("ui", ui)):
        data = dump(build(events))
        packed = gz(data)
        path = os.path.join(HERE, f"{NAME}.{fmt}.json.gz")
        if checking:
            ok = check(path, data, packed) and ok
            continue
        with open(path, "wb") as f:
            f.write(packed)
        print(f"{NAME}.{fmt}.json.gz: {len(packed)} bytes ({len(data)} unzipped)", file=sys.stderr)
    if checking:
        print("the fixtures are build.py's output" if ok else "run build.py to rebuild them", file=sys.stderr)
        sys.exit(0 if ok else 1)
    calls = [c for s in steps for c in s["calls"]]
    names = {}
    for c in calls:
        names[c["name"]] = names.get(c["name"], 0) + 1
    print(f"{len(steps)} assistant turns, {len(calls)} tool calls {names}, "
          f"{sum(1 for s in steps if s['reasoning'])} with reasoning, "
          f"{sum(1 for s in steps if len(s['calls']) > 1)} with parallel calls, "
          f"{sum(1 for s in steps for r in s['results'] if len(r['text']) >= 20000)} results of 20k+ characters, "
          f"{sum(len(e['images']) for e in events if e['kind'] == 'user')} images", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
