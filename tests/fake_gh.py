#!/usr/bin/env python3
"""A fake `gh` for the GitHub end-to-end tests: never touches the network.

State lives in state.json beside this script: issues, known labels and the bare origin's
path. Pull requests are derived from the origin:
a pushed branch is an open PR, a branch merged into origin/main is a merged one, and a
merged branch `<N>-...` closes issue N (as "Closes #N" would on GitHub). Every invocation's
argv is appended to gh.log as one JSON line. Calls are serialized by an exclusive lock on
state.lock, so several runners may share one fake GitHub.

Every call the runner makes is GitHub's REST API through `api --include [-X M] <endpoint>
[--input -]` (issues, labels, comments, pull requests, merges; the review decision through
`api --include graphql`), served from the same state as GitHub answers it: the status line,
the headers, the body. Switches in state.json for GitHub as it really is: "noClose" (merges close no issue),
"staleOpen" (reads show these issues open), "prRecords" (PRs exist only once created, else
derived from the origin), "mergeGate" (GitHub's account of a PR's mergeability in gh's JSON
names: `mergeStateStatus`, `isDraft`, and the `reviewDecision` GraphQL gives), "reviews",
"reviewComments", "prComments" (a PR's REST lists by its number),
"requireUpToDate" (a PR is `behind` while the branch lacks main),
"teammateMoves" (pushes to main right before that many merge looks), "refuseMerge" (GitHub's
message refusing every merge, a 405), "authHosts" (the hosts `auth status --hostname`
accepts). `gh pr`/`gh issue` commands are refused: the runner never prints GitHub's words
without its status.
"""
# datetime, shutil and tempfile are imported where a rare call needs them, and neither
# subprocess nor urllib.parse at all (`run`, `unquote`): each of the hundreds of calls a run
# makes would pay for them at start (the two were a fifth of a call's CPU).
import fcntl
import json
import re
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
STATE = os.path.join(HERE, "state.json")
LOG = os.path.join(HERE, "gh.log")


def load():
    with open(STATE) as f:
        return json.load(f)


def save(state):
    tmp = STATE + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f, indent=1)
    os.replace(tmp, STATE)


def fail(msg, code=1):
    sys.stderr.write(msg + "\n")
    sys.exit(code)


def opt(args, name, default=None):
    if name in args:
        i = args.index(name)
        if i + 1 < len(args):
            return args[i + 1]
    return default


class Ran:
    """How a command ended: its exit code and what it printed, as text."""

    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def run(argv, input=None, env=None):
    """`argv` run to its end, `input` on its standard input. What git prints here is small, so
    reading its output before its errors cannot fill a pipe and stall."""
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    r_err, w_err = os.pipe()
    actions = [(os.POSIX_SPAWN_DUP2, r_in, 0), (os.POSIX_SPAWN_DUP2, w_out, 1),
               (os.POSIX_SPAWN_DUP2, w_err, 2)]
    pid = os.posix_spawnp(argv[0], argv, os.environ if env is None else env,
                          file_actions=actions)
    for fd in (r_in, w_out, w_err):
        os.close(fd)
    try:
        if input:
            os.write(w_in, input.encode())
    except BrokenPipeError:
        pass  # the command ended without reading it: its exit code says why
    os.close(w_in)
    out, err = read_all(r_out), read_all(r_err)
    _, status = os.waitpid(pid, 0)
    return Ran(os.waitstatus_to_exitcode(status), out, err)


def read_all(fd):
    chunks = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


def unquote(text):
    """`%XX` escapes decoded, as GitHub reads a query's values."""
    parts = text.split("%")
    raw = parts[0].encode()
    for part in parts[1:]:
        pair = part[:2]
        if len(pair) == 2 and all(c in "0123456789abcdefABCDEF" for c in pair):
            raw += bytes.fromhex(pair) + part[2:].encode()
        else:
            raw += b"%" + part.encode()
    return raw.decode("utf-8", "replace")


def git_origin(state, *args):
    return run(["git", "-C", state["origin"], *args])


def remote_heads(state):
    out = git_origin(state, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads")
    heads = {}
    for line in out.stdout.splitlines():
        name, sha = line.split()
        heads[name] = sha
    return heads


def up_to_date(state, head):
    """Whether the branch head holds origin's main."""
    return git_origin(state, "merge-base", "--is-ancestor", "main", head).returncode == 0


def teammate_push(state):
    """A teammate's commit on origin's main: one new file, made without a work tree."""
    origin = state["origin"]
    main = git_origin(state, "rev-parse", "main").stdout.strip()
    n = len(git_origin(state, "rev-list", "main").stdout.split())
    def git(*args, input=None):
        env = dict(os.environ, GIT_AUTHOR_NAME="Teammate", GIT_AUTHOR_EMAIL="t@example.invalid",
                   GIT_COMMITTER_NAME="Teammate", GIT_COMMITTER_EMAIL="t@example.invalid")
        out = run(["git", "-C", origin, *args], input=input, env=env)
        if out.returncode != 0:
            fail("fake gh: git %r failed: %s" % (args, out.stderr), 2)
        return out.stdout.strip()
    blob = git("hash-object", "-w", "--stdin", input="a teammate's change %d\n" % n)
    tree = git("mktree", input=git("ls-tree", "main") + "\n100644 blob %s\tteammate-%d.txt\n" % (blob, n))
    commit = git("commit-tree", tree, "-p", main, "-m", "a teammate's change %d" % n)
    git("update-ref", "refs/heads/main", commit, main)


def merged(state, sha):
    """The branch head is in main but is not one of main's own first-parent commits."""
    if git_origin(state, "merge-base", "--is-ancestor", sha, "main").returncode != 0:
        return False
    first_parent = git_origin(state, "rev-list", "--first-parent", "main").stdout.split()
    return sha not in first_parent


def refresh(state):
    """Closes issue N once a branch `N-...` is merged into origin/main, unless "noClose" says
    GitHub does not close issues on merge (a token that cannot write issues, a PR whose base
    is not the default branch)."""
    if state.get("noClose"):
        return
    heads = remote_heads(state)
    for issue in state["issues"]:
        if issue["state"] != "OPEN":
            continue
        prefix = "%d-" % issue["number"]
        if any(b.startswith(prefix) and merged(state, sha) for b, sha in heads.items()):
            issue["state"] = "CLOSED"
    save(state)


def as_check_run(check):
    """A `gh pr checks` entry of the state file as GitHub's REST API lists a check run."""
    bucket = check.get("bucket", "pass")
    status = "in_progress" if bucket == "pending" else "completed"
    conclusion = {"pass": "success", "fail": "failure", "skipping": "skipped",
                  "cancel": "cancelled"}.get(bucket)
    return {"name": check.get("name", ""), "status": status, "conclusion": conclusion,
            "html_url": check.get("link")}


def commit_ci(state, endpoint):
    """`gh api --include repos/{owner}/{repo}/commits/<ref>/check-runs|status`.

    "checks": a list of check lists; each CI look takes the next one, the last one stays. A
    look is the check runs and then the statuses; the details of a failing look (the same two
    calls right after it) see the same list again.
    """
    if endpoint.split("?")[0].endswith("/status"):
        body = {"state": "pending", "statuses": [], "total_count": 0}
        if state.pop("lookInProgress", None) and any(
                c.get("bucket") == "fail" for c in state.get("lastChecks", [])):
            state["afterFailingLook"] = True
        save(state)
    else:
        seq = state.get("checks") or [[]]
        if state.pop("afterFailingLook", None) and "lastChecks" in state:
            current = state["lastChecks"]
        else:
            current = seq[0]
            state["lastChecks"] = current
            state["lookInProgress"] = True
            if len(seq) > 1:
                state["checks"] = seq[1:]
        save(state)
        runs = [as_check_run(c) for c in current]
        body = {"total_count": len(runs), "check_runs": runs}
    sys.stdout.write("HTTP/2.0 200 OK\r\nContent-Type: application/json; charset=utf-8\r\n\r\n")
    print(json.dumps(body))


def rest_issue(state, issue):
    """An issue as GitHub's REST API answers it."""
    shown = "OPEN" if issue["number"] in state.get("staleOpen", []) else issue["state"]
    return {"number": issue["number"], "title": issue["title"], "body": issue["body"],
            "state": shown.lower(), "labels": [{"name": l} for l in issue["labels"]],
            "state_reason": issue.get("stateReason"),
            "milestone": milestone_rest(state, issue.get("milestone"))}


def milestone_rest(state, title):
    """A milestone as GitHub's REST API names it: its number (its place in the list) and title."""
    if not title:
        return None
    titles = state.get("milestones", [])
    number = titles.index(title) + 1 if title in titles else 0
    return {"number": number, "title": title}


def answer(status, body, code=None):
    """`gh api --include`'s output: the status line, the headers, the body; gh exits 1 on a
    status that is not a success."""
    reason = {200: "OK", 201: "Created", 204: "No Content", 404: "Not Found",
              405: "Method Not Allowed", 409: "Conflict",
              422: "Unprocessable Entity"}.get(status, "Error")
    sys.stdout.write("HTTP/2.0 %d %s\r\nContent-Type: application/json; charset=utf-8\r\n\r\n" % (status, reason))
    if body is not None:
        print(json.dumps(body))
    if status >= 300:
        sys.stderr.write("gh: %s (HTTP %d)\n" % (reason, status))
        sys.exit(1)


def pull_rest(state, pr):
    """A pull request as GitHub's REST API answers it."""
    gate = {"mergeStateStatus": "CLEAN", "isDraft": False}
    gate.update(state.get("mergeGate", {}))
    merge_state = (gate.get("mergeStateStatus") or "UNKNOWN").lower()
    head = remote_heads(state).get(pr["branch"])
    if head and state.get("requireUpToDate") and not up_to_date(state, head):
        merge_state = "behind"
    return {"number": pr["number"], "html_url": pr["url"], "title": pr.get("title", ""),
            "body": pr.get("body", ""),
            "state": "open" if pr["state"] == "OPEN" else "closed",
            "merged_at": "2026-01-01T00:00:00Z" if pr["state"] == "MERGED" else None,
            "draft": bool(gate.get("isDraft")), "mergeable_state": merge_state,
            "head": {"ref": pr["branch"], "sha": head}}


def prs_of(state, branch):
    """The branch's pull requests: those `pr create` opened ("prRecords"), or one derived from
    the origin (a pushed branch is open, a merged one merged)."""
    if state.get("prRecords"):
        return [p for p in state.get("prs", []) if p["branch"] == branch]
    sha = remote_heads(state).get(branch)
    if sha is None:
        return []
    number = 100 + int(branch.split("-")[0])
    return [{"number": number, "url": "https://github.invalid/o/r/pull/%d" % number,
             "state": "MERGED" if merged(state, sha) else "OPEN", "branch": branch}]


def pulls_cmd(state, method, parts, params, sent):
    """`repos/{owner}/{repo}/pulls…`: list one branch's, create, read one, merge one."""
    if parts == ["pulls"] and method == "GET":
        head = unquote(params.get("head", ""))
        if not head.startswith("{owner}:") or params.get("state") != "all":
            fail("fake gh: unexpected pull request list %r" % params, 2)
        branch = head[len("{owner}:"):]
        return answer(200, [pull_rest(state, p) for p in prs_of(state, branch)])
    if parts == ["pulls"] and method == "POST":
        branch, base = sent.get("head"), sent.get("base")
        if branch not in remote_heads(state):
            return answer(422, {"message": "Validation Failed",
                                "errors": [{"resource": "PullRequest", "field": "head", "code": "invalid"}]})
        prs = state.setdefault("prs", [])
        number = 200 + len(prs)
        url = "https://github.invalid/o/r/pull/%d" % number
        pr = {"number": number, "url": url, "state": "OPEN", "branch": branch, "base": base,
              "title": sent["title"], "body": sent["body"]}
        prs.append(pr)
        save(state)
        return answer(201, pull_rest(state, pr))
    number = int(parts[1])
    every = state.get("prs", []) if state.get("prRecords") else [
        p for b in remote_heads(state) if b.split("-")[0].isdigit() for p in prs_of(state, b)]
    pr = next((p for p in every if p["number"] == number), None)
    if pr is None:
        return answer(404, {"message": "Not Found"})
    if parts[2:] == [] and method == "GET":
        # "teammateMoves": that many times, a teammate pushes to main right before the
        # merge's look; "requireUpToDate": then GitHub says behind until the branch holds main.
        head = remote_heads(state).get(pr["branch"])
        if head and state.get("teammateMoves", 0) > 0 and up_to_date(state, head):
            state["teammateMoves"] -= 1
            teammate_push(state)
            save(state)
        return answer(200, pull_rest(state, pr))
    if parts[2:] == ["merge"] and method == "PUT":
        return merge_rest(state, pr, sent)
    if parts[2:] in (["reviews"], ["comments"]) and method == "GET":
        # "reviews" / "reviewComments": {PR number: [GitHub's REST entries]}.
        key = "reviews" if parts[2] == "reviews" else "reviewComments"
        listed = [with_association(e) for e in state.get(key, {}).get(str(number), [])]
        return answer(200, listed if params.get("page", "1") == "1" else [])
    fail("fake gh: unsupported pull request call %r" % parts, 2)


def with_association(entry):
    """A review or comment as GitHub lists it: its author a collaborator unless it says."""
    return dict({"author_association": "COLLABORATOR"}, **entry)


def merge_rest(state, pr, sent):
    """`PUT …/pulls/N/merge` with {"sha", "merge_method"}, as GitHub answers it."""
    branch = pr["branch"]
    state.setdefault("mergeRequests", []).append(sent)
    save(state)
    if sent.get("merge_method") != "merge":
        fail("fake gh: unexpected merge request %r" % sent, 2)
    if pr["state"] != "OPEN":
        return answer(405, {"message": "Pull Request is not mergeable"})
    # "refuseMerge": GitHub's answer when the base branch's rules refuse the merge.
    if state.get("refuseMerge"):
        return answer(405, {"message": state["refuseMerge"]})
    head = sent.get("sha")
    if head is not None and remote_heads(state).get(branch) != head:
        return answer(409, {"message": "Head branch was modified. Review and try the merge again."})
    import shutil
    import tempfile
    work = tempfile.mkdtemp()
    try:
        for step in (["clone", "--quiet", state["origin"], work],
                     ["-C", work, "-c", "user.name=gh", "-c", "user.email=gh@invalid",
                      "merge", "--no-ff", "--quiet", "-m",
                      "Merge pull request #%d from %s" % (pr["number"], branch), head or ("origin/" + branch)],
                     ["-C", work, "push", "--quiet", "origin", "HEAD:main"]):
            out = run(["git", *step])
            if out.returncode != 0:
                return answer(405, {"message": "Pull Request is not mergeable"})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    pr["state"] = "MERGED"
    closing = [] if state.get("noClose") else re.finditer(r"(?i)closes #(\d+)", pr.get("body", ""))
    for m in closing:
        for issue in state["issues"]:
            if issue["number"] == int(m.group(1)):
                issue["state"] = "CLOSED"
    save(state)
    return answer(200, {"merged": True, "message": "Pull Request successfully merged"})


def graphql_cmd(state, args):
    """`api --include graphql …`: the review decision of a pull request ("mergeGate")."""
    query = next((a for a in args if a.startswith("query=")), "")
    if "lastEditedAt" in query:
        # Nobody edited an issue's description after its label.
        return answer(200, {"data": {"repository": {"issue": {"lastEditedAt": None, "editor": None}}}})
    if "reviewDecision" not in query:
        fail("fake gh: unsupported GraphQL query %r" % args, 2)
    decision = state.get("mergeGate", {}).get("reviewDecision") or None
    return answer(200, {"data": {"repository": {"pullRequest": {"reviewDecision": decision}}}})


def rest_cmd(state, args):
    """The tracker's REST calls: `gh api --include [-X METHOD] <endpoint> [--input -]`."""
    method = opt(args, "-X", "GET")
    if "user" in args:
        return answer(200, {"login": "runner", "id": 1})
    if "graphql" in args:
        return graphql_cmd(state, args)
    endpoint = next(a for a in args[1:] if a.startswith("repos/"))
    path, _, query = endpoint.partition("?")
    params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
    parts = path.split("/")[3:]
    sent = json.loads(sys.stdin.read() or "null") if "--input" in args else None
    if parts and parts[0] == "pulls":
        return pulls_cmd(state, method, parts, params, sent)
    if parts and parts[0] == "collaborators":
        # Everyone the fake knows may write (the tests of who counts use the fake API).
        return answer(200, {"permission": "write", "user": {"login": parts[1]}})
    if parts and parts[0] == "labels":
        if method == "GET":
            name = parts[1].replace("%20", " ")
            return answer(200, {"name": name}) if name in state["labels"] else answer(404, {"message": "Not Found"})
        if sent["name"] in state["labels"]:
            return answer(422, {"message": "Validation Failed", "errors": [{"code": "already_exists"}]})
        state["labels"].append(sent["name"])
        save(state)
        return answer(201, sent)
    if parts == ["issues"]:
        refresh(state)
        label = params.get("labels")
        label = label and unquote(label)
        page = int(params.get("page", "1"))
        want = params.get("state", "open")
        milestone = params.get("milestone")
        found = [rest_issue(state, i) for i in sorted(state["issues"], key=lambda i: -i["number"])
                 if want in ("all", rest_issue(state, i)["state"])
                 and (label is None or label in i["labels"])
                 and (milestone is None or str((rest_issue(state, i)["milestone"] or {}).get("number")) == milestone)]
        return answer(200, found if page == 1 else [])
    number = int(parts[1])
    issue = next((i for i in state["issues"] if i["number"] == number), None)
    if issue is None and parts[2:] == ["comments"] and method == "GET":
        # A pull request's conversation ("prComments": {PR number: [entries]}).
        listed = [with_association(e) for e in state.get("prComments", {}).get(str(number), [])]
        return answer(200, listed if params.get("page", "1") == "1" else [])
    if issue is None:
        return answer(404, {"message": "Not Found"})
    rest = parts[2:]
    if rest == [] and method == "GET":
        refresh(state)
        return answer(200, rest_issue(state, issue))
    if rest == [] and method == "PATCH":
        if sent.get("state") == "closed" and issue["state"] != "CLOSED":
            issue["state"] = "CLOSED"
            state.setdefault("closedBy", {})[str(number)] = "the REST API"
        save(state)
        return answer(200, rest_issue(state, issue))
    if rest == ["comments"] and method == "POST":
        issue.setdefault("comments", []).append(sent["body"])
        import datetime
        now = datetime.datetime.now(datetime.timezone.utc)
        issue.setdefault("commentTimes", []).append(now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
        save(state)
        return answer(201, {"body": sent["body"]})
    if rest == ["events"]:
        page = int(params.get("page", "1"))
        events = [{"event": "labeled", "actor": {"login": "runner"}, "label": {"name": l},
                   "created_at": "2026-01-01T00:00:00Z"} for l in issue["labels"]]
        return answer(200, events if page == 1 else [])
    if rest == ["comments"]:
        page = int(params.get("page", "1"))
        comments = [{"body": b, "created_at": at, "user": {"login": "runner"},
                     "author_association": "OWNER"}
                    for b, at in zip(issue.get("comments", []), issue.get("commentTimes", []))]
        return answer(200, comments if page == 1 else [])
    if rest == ["labels"] and method == "POST":
        for label in sent["labels"]:
            if label not in state["labels"]:
                state["labels"].append(label)
            if label not in issue["labels"]:
                issue["labels"].append(label)
        save(state)
        return answer(200, [{"name": l} for l in issue["labels"]])
    if rest == ["assignees"] and method == "POST":
        for login in sent["assignees"]:
            if login not in issue.setdefault("assignees", []):
                issue["assignees"].append(login)
        save(state)
        return answer(201, rest_issue(state, issue))
    if len(rest) == 2 and rest[0] == "labels" and method == "DELETE":
        name = rest[1].replace("%20", " ")
        if name not in issue["labels"]:
            return answer(404, {"message": "Label does not exist"})
        issue["labels"].remove(name)
        save(state)
        return answer(200, [{"name": l} for l in issue["labels"]])
    fail("fake gh: unsupported REST call %r" % args, 2)


def main():
    with open(os.path.join(HERE, "state.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        serve()


def serve():
    args = sys.argv[1:]
    with open(LOG, "a") as f:
        f.write(json.dumps(args) + "\n")
    state = load()
    if not args:
        fail("fake gh: no arguments", 2)
    # A network blip: "failNext": N fails the next N calls, "failAlways": true every call,
    # the way gh reports a connection it could not make.
    # "failMatching": [[words...], ...] fails only the calls whose argv starts with them
    # (each word matches an argument it begins).
    def starts(m):
        return len(args) >= len(m) and all(a.startswith(w) for a, w in zip(args, m))

    matching = any(starts(m) for m in state.get("failMatching", []))
    # "failMatchingOnce": [[words...], ...] fails the first call that starts with each, once.
    # (Each word matches an argument it begins.)
    once = state.get("failMatchingOnce", [])
    hit = next((m for m in once if starts(m)), None)
    if hit is not None:
        once.remove(hit)
        save(state)
        matching = True
    if matching or state.get("failAlways") or state.get("failNext", 0) > 0:
        if not matching and state.get("failNext", 0) > 0:
            state["failNext"] -= 1
            save(state)
        fail("error connecting to api.github.com\ncheck your internet connection or https://githubstatus.com")
    if args[0] != "api" or "--include" not in args:
        state.pop("afterFailingLook", None)
    if args[:2] == ["api", "--include"] and "/commits/" in args[2]:
        commit_ci(state, args[2])
    elif args[0] == "api" and any(a.startswith("repos/{owner}/{repo}/milestones") for a in args):
        if "--include" in args:
            sys.stdout.write("HTTP/2.0 200 OK\r\nContent-Type: application/json; charset=utf-8\r\n\r\n")
        print(json.dumps([{"number": n + 1, "title": m}
                          for n, m in enumerate(state.get("milestones", []))]))
    elif args[:2] == ["api", "--include"] and (any(
            a.startswith("repos/{owner}/{repo}/" + w) for a in args
            for w in ("issues", "labels", "pulls", "collaborators")) or "user" in args or "graphql" in args):
        rest_cmd(state, args)
    elif args[:2] == ["run", "view"] and "--log-failed" in args:
        print(state.get("jobLogs", {}).get(opt(args, "--job"), ""))
    elif args[:2] == ["auth", "status"]:
        # "authHosts": the hosts gh is logged in to (github.com and GitHub Enterprise ones).
        host = opt(args, "--hostname", "github.com")
        if host not in state.get("authHosts", []):
            fail("You are not logged into any accounts on %s" % host)
        sys.stderr.write("%s\n  ✓ Logged in to %s as runner (GH_TOKEN)\n" % (host, host))
    else:
        fail("fake gh: unsupported command %r" % args, 2)


main()
