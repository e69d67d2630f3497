#!/usr/bin/env python3
"""Drives every route of the server example (Examples/Server) with real HTTP requests.

    scripts/test-server.py BINARY [--database PATH-OR-URL]

Starts BINARY with --port 0 (a free port, read from the line it prints) on the database given
(default: a SQLite file in a new temporary directory), waits until GET /health answers, then
checks each route of /work/notes/server-api-33.md: status codes, JSON bodies, and, for every
bad request (malformed JSON, wrong types, unknown fields, huge bodies, bad ids, bad paging,
SQL-looking strings), that nothing was written (the counts of authors and posts before and
after). The server is always stopped: at the end, on any failure, on SIGINT/SIGTERM, and, should
this script be killed outright, by the kernel (PR_SET_PDEATHSIG). Standard library only.
Exits 1 at the first failed check, naming it.
"""
import argparse
import ctypes
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HOST = "127.0.0.1"
port = 0
checks = 0


class Failure(Exception):
    pass


def check(condition, what):
    global checks
    checks += 1
    if not condition:
        raise Failure(what)


# ---- HTTP ------------------------------------------------------------------------------------

class Reply:
    def __init__(self, status, headers, raw):
        self.status, self.headers, self.raw = status, headers, raw
        self.json = None
        if raw:
            try:
                self.json = json.loads(raw)
            except ValueError:
                pass

    def __repr__(self):
        return f"{self.status} {self.raw[:300]!r}"


def request(method, path, body=None, content_type="application/json", headers=None):
    """One request on a new connection. body: a Python value (sent as JSON), bytes or str (as is)."""
    connection = http.client.HTTPConnection(HOST, port, timeout=30)
    sent = dict(headers or {})
    if body is not None:
        if not isinstance(body, (bytes, str)) and not hasattr(body, "__next__"):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        if content_type is not None:
            sent["Content-Type"] = content_type
    try:
        connection.request(method, path, body=body, headers=sent)
        response = connection.getresponse()
        return Reply(response.status, response.headers, response.read())
    finally:
        connection.close()


def expect(reply, status, what):
    check(reply.status == status, f"{what}: expected {status}, got {reply!r}")
    if status == 204:
        check(reply.raw == b"", f"{what}: a 204 has no body, got {reply.raw!r}")
        return reply.json
    check((reply.headers.get("Content-Type") or "").startswith("application/json"),
          f"{what}: Content-Type is {reply.headers.get('Content-Type')!r}, not JSON")
    check(reply.json is not None, f"{what}: the body is not JSON: {reply.raw[:200]!r}")
    return reply.json


def expect_error(reply, status, what, message=None, errors=None):
    """A 4xx JSON error: {"error": "..."} (the message, when given), and the keyed errors."""
    body = expect(reply, status, what)
    check(isinstance(body.get("error"), str) and body["error"], f"{what}: no \"error\" sentence in {body}")
    if message is not None:
        check(body["error"] == message, f"{what}: error {body['error']!r}, expected {message!r}")
    if errors is not None:
        check(body.get("errors") == errors, f"{what}: errors {body.get('errors')}, expected {errors}")
    return body


def counts():
    authors = expect(request("GET", "/authors?per=1"), 200, "count authors")["total"]
    posts = expect(request("GET", "/posts?per=1"), 200, "count posts")["total"]
    return authors, posts


class Unchanged:
    """with Unchanged("what"): the block must write nothing (counts of authors and posts)."""
    def __init__(self, what):
        self.what = what

    def __enter__(self):
        self.before = counts()

    def __exit__(self, kind, value, traceback):
        if kind is None:
            after = counts()
            check(after == self.before, f"{self.what}: wrote something: (authors, posts) {self.before} -> {after}")


# ---- checks ----------------------------------------------------------------------------------

def is_iso8601(text):
    return isinstance(text, str) and len(text) == 20 and text[4] == "-" and text[10] == "T" and text.endswith("Z")


def check_author(body, name, email, what):
    check(set(body) >= {"id", "name", "email", "created_at"}, f"{what}: fields {sorted(body)}")
    check(isinstance(body["id"], int) and body["id"] > 0, f"{what}: id {body['id']!r}")
    check(body["name"] == name and body["email"] == email, f"{what}: {body}")
    check(is_iso8601(body["created_at"]), f"{what}: created_at {body['created_at']!r}")


def test_health():
    check(expect(request("GET", "/health"), 200, "health") == {"status": "ok"}, "health answers {\"status\":\"ok\"}")


def test_authors():
    empty = expect(request("GET", "/authors"), 200, "empty list")
    check(empty == {"items": [], "page": 1, "per": 20, "total": 0}, f"empty list: {empty}")

    ada = expect(request("POST", "/authors", {"name": "  Ada  ", "email": "ada@example.com"}), 201, "create Ada")
    check_author(ada, "Ada", "ada@example.com", "create Ada (name trimmed)")
    check("posts" not in ada, "a created author has no posts field")
    got = expect(request("GET", f"/authors/{ada['id']}"), 200, "get Ada")
    check(got == dict(ada, posts=[]), f"get Ada: {got} vs {ada}")

    with Unchanged("invalid authors"):
        expect_error(request("POST", "/authors", {"name": "", "email": "not an address"}), 422, "blank name, bad email",
                     "validation failed", {"name": ["can't be blank"], "email": ["is invalid"]})
        expect_error(request("POST", "/authors", {}), 422, "nothing given",
                     "validation failed", {"name": ["can't be blank"], "email": ["can't be blank"]})
        expect_error(request("POST", "/authors", {"name": "   ", "email": "a@b"}), 422, "all-space name",
                     errors={"name": ["can't be blank"]})
        expect_error(request("POST", "/authors", {"name": "x" * 101, "email": "a@b"}), 422, "name of 101 characters",
                     errors={"name": ["is too long (maximum is 100 characters)"]})
        for email in ["@example.com", "ada@", "ada@@example.com", "a@b@c", "ada example.com"]:
            expect_error(request("POST", "/authors", {"name": "A", "email": email}), 422, f"email {email!r}",
                         errors={"email": ["is invalid"]})
        expect_error(request("POST", "/authors", {"name": "Ada II", "email": "ada@example.com"}), 422, "duplicate email",
                     errors={"email": ["already exists"]})
        bad_input(lambda body, **kw: request("POST", "/authors", body, **kw), "POST /authors",
                  {"name": "A", "email": "a@b"}, {"name": "a string", "email": "a string"})

    charset = expect(request("POST", "/authors", {"name": "Cha", "email": "cha@example.com"},
                             content_type="application/json; charset=utf-8"), 201, "JSON with a charset")
    expect(request("DELETE", f"/authors/{charset['id']}"), 204, "delete it")

    # Exactly 100 characters (after trimming) and Unicode: accepted.
    long_name = "é" * 100
    long = expect(request("POST", "/authors", {"name": long_name, "email": "long@example.com"}), 201, "100-character name")
    check(long["name"] == long_name, "a 100-character Unicode name is kept")

    # SQL-looking strings are stored verbatim and never interpreted.
    sql = "Robert'); DROP TABLE \"Author\"; --"
    bobby = expect(request("POST", "/authors", {"name": sql, "email": "x';DELETE/**/FROM\"Post\";--@example.com"}), 201, "SQL-looking name")
    check(bobby["name"] == sql, f"SQL-looking name stored verbatim: {bobby['name']!r}")
    check(expect(request("GET", f"/authors/{bobby['id']}"), 200, "get bobby")["name"] == sql, "read back verbatim")
    check(counts()[0] == 3, "the table is still there, with its 3 authors")

    # PATCH
    patched = expect(request("PATCH", f"/authors/{ada['id']}", {"name": "Ada Lovelace"}), 200, "rename Ada")
    check(patched == dict(ada, name="Ada Lovelace"), f"rename changes only the name: {patched}")
    check(expect(request("PATCH", f"/authors/{ada['id']}", {}), 200, "empty patch") == patched, "an empty patch changes nothing")
    with Unchanged("invalid author patches"):
        expect_error(request("PATCH", f"/authors/{ada['id']}", {"email": "nope"}), 422, "patch bad email",
                     errors={"email": ["is invalid"]})
        expect_error(request("PATCH", f"/authors/{ada['id']}", {"email": "long@example.com"}), 422, "patch to a taken email",
                     errors={"email": ["already exists"]})
        expect_error(request("PATCH", f"/authors/{ada['id']}", {"name": ""}), 422, "patch blank name",
                     errors={"name": ["can't be blank"]})
        expect_error(request("PATCH", "/authors/999999", {"name": "Nobody"}), 404, "patch a missing author")
        bad_input(lambda body, **kw: request("PATCH", f"/authors/{ada['id']}", body, **kw), "PATCH /authors/:id",
                  {"name": "A"}, {"name": "a string", "email": "a string"})
    check(expect(request("GET", f"/authors/{ada['id']}"), 200, "Ada after bad patches")["name"] == "Ada Lovelace",
          "failed patches left Ada as she was")
    check(expect(request("PATCH", f"/authors/{ada['id']}", {"email": "ada@example.com"}), 200, "patch own email")["email"]
          == "ada@example.com", "re-saving an author's own email passes uniqueness")

    bad_ids("/authors")
    return ada


def bad_input(send, route, valid, types):
    """What every body-taking route refuses: each is a 4xx JSON error, nothing written."""
    expect_error(send({**valid, "admin": True}), 400, f"{route}: unknown field", 'unknown field "admin"')
    expect_error(send('{"name": "A", '), 400, f"{route}: malformed JSON")
    expect_error(send("{'name': 'A'}"), 400, f"{route}: single-quoted JSON")
    expect_error(send(""), 400, f"{route}: empty body")
    expect_error(send("[1, 2]"), 400, f"{route}: an array body")
    expect_error(send("\"text\""), 400, f"{route}: a string body")
    expect_error(send("null"), 400, f"{route}: null body")
    expect_error(send(json.dumps(valid), content_type=None), 415, f"{route}: no Content-Type")
    expect_error(send(json.dumps(valid), content_type="text/plain"), 415, f"{route}: text/plain")
    for field, kind in types.items():
        wrong = 5 if kind == "a string" else "ten"
        body = expect_error(send({**valid, field: wrong}), 400, f"{route}: {field} of the wrong type")
        check(field in body["error"] and kind in body["error"], f"{route}: the message names {field} and {kind}: {body['error']!r}")
        expect_error(send({**valid, field: None}), 400, f"{route}: {field} null")
        expect_error(send({**valid, field: [1]}), 400, f"{route}: {field} an array")
        expect_error(send({**valid, field: {"$gt": ""}}), 400, f"{route}: {field} an object")
    # Over 1 MiB: 413, whether the length is declared or the body is chunked.
    huge = json.dumps({**valid, "padding": "x" * (1 << 20)})
    expect_error(send(huge), 413, f"{route}: a body over 1 MiB")
    expect_error(send(iter([huge[i:i + 65536].encode() for i in range(0, len(huge), 65536)])), 413,
                 f"{route}: a chunked body over 1 MiB")


def bad_ids(collection):
    for bad in ["abc", "0", "-1", "1.5", "99999999999999999999", "1%20OR%201=1", "%27%3B%20DROP%20TABLE%20x"]:
        expect_error(request("GET", f"{collection}/{bad}"), 400, f"GET {collection}/{bad}")
        expect_error(request("DELETE", f"{collection}/{bad}"), 400, f"DELETE {collection}/{bad}")
        expect_error(request("PATCH", f"{collection}/{bad}", {}), 400, f"PATCH {collection}/{bad}")
    expect_error(request("GET", f"{collection}/424242"), 404, f"GET {collection}/424242")


def test_author_list():
    for name in ["Ad", "ada", "Adam", "Bea", "100% Ad", "A_a"]:
        expect(request("POST", "/authors", {"name": name, "email": f"{abs(hash(name))}@list.example"}), 201, f"create {name}")
    everyone = expect(request("GET", "/authors?per=100"), 200, "all authors")
    ids = [a["id"] for a in everyone["items"]]
    check(ids == sorted(ids) and everyone["total"] == len(ids), f"authors in id order with their total: {everyone}")

    def names(query):
        return [a["name"] for a in expect(request("GET", "/authors?per=100&" + query), 200, query)["items"]]
    check(names("name=Ad") == ["Ada Lovelace", "Ad", "Adam"], f"prefix Ad (case-sensitive): {names('name=Ad')}")
    check(names("name=ad") == ["ada"], f"prefix ad: {names('name=ad')}")
    check(names("name=100%25") == ["100% Ad"], "a % in the prefix is a character, not a wildcard")
    check(names("name=A_") == ["A_a"], "an _ in the prefix is a character")
    check(names("name=%27%20OR%201%3D1%20--") == [], "an SQL-looking prefix matches nothing")
    check(names("name=") == names(""), "an empty prefix filters nothing")

    page2 = expect(request("GET", "/authors?page=2&per=2"), 200, "page 2")
    check(page2["page"] == 2 and page2["per"] == 2 and page2["total"] == len(ids), f"page 2: {page2}")
    check([a["id"] for a in page2["items"]] == ids[2:4], "page 2 holds the 3rd and 4th authors")
    beyond = expect(request("GET", "/authors?page=1000&per=100"), 200, "a page beyond the end")
    check(beyond["items"] == [] and beyond["total"] == len(ids), f"beyond the end: {beyond}")
    check(expect(request("GET", "/authors?name=Ad&per=1"), 200, "filtered total")["total"] == 3, "the total counts the filtered rows")
    for query in ["page=0", "page=-1", "page=abc", "page=1.5", "page=", "per=0", "per=101", "per=x", "per=-5",
                  "page=99999999999999999999", "page=1&page=2", "per=20%20OR%201=1"]:
        expect_error(request("GET", "/authors?" + query), 400, f"GET /authors?{query}")
        expect_error(request("GET", "/posts?" + query), 400, f"GET /posts?{query}")


def test_posts(ada):
    post = expect(request("POST", "/posts", {"author_id": ada["id"], "title": "Notes"}), 201, "create a post")
    check(set(post) == {"id", "author_id", "title", "body", "score", "published", "created_at"}, f"post fields {sorted(post)}")
    check((post["author_id"], post["title"], post["body"], post["score"], post["published"]) == (ada["id"], "Notes", "", 0, False),
          f"defaults: body \"\", score 0, published false: {post}")
    check(is_iso8601(post["created_at"]), f"created_at {post['created_at']!r}")
    full = expect(request("POST", "/posts", {"author_id": ada["id"], "title": "t" * 200, "body": "b" * 10000,
                                             "score": 1000, "published": True}), 201, "a post at every limit")
    check(full["score"] == 1000 and full["published"] is True and len(full["body"]) == 10000, "kept at the limits")
    check(expect(request("GET", f"/posts/{post['id']}"), 200, "get the post") == post, "get returns what create did")

    with Unchanged("invalid posts"):
        expect_error(request("POST", "/posts", {"title": "No author"}), 422, "no author_id",
                     errors={"author_id": ["can't be blank"]})
        expect_error(request("POST", "/posts", {"author_id": 987654, "title": "Ghost"}), 422, "an unknown author",
                     "validation failed", {"author_id": ["does not exist"]})
        expect_error(request("POST", "/posts", {"author_id": ada["id"], "title": "", "score": 1001}), 422, "blank title, score 1001",
                     errors={"title": ["can't be blank"], "score": ["must be less than or equal to 1000"]})
        expect_error(request("POST", "/posts", {"author_id": ada["id"], "title": "x", "score": -1}), 422, "score -1",
                     errors={"score": ["must be greater than or equal to 0"]})
        expect_error(request("POST", "/posts", {"author_id": ada["id"], "title": "t" * 201}), 422, "title of 201",
                     errors={"title": ["is too long (maximum is 200 characters)"]})
        expect_error(request("POST", "/posts", {"author_id": ada["id"], "title": "x", "body": "b" * 10001}), 422, "body of 10,001",
                     errors={"body": ["is too long (maximum is 10000 characters)"]})
        body = expect_error(request("POST", "/posts", {"author_id": ada["id"], "title": "x", "score": "ten"}), 400, "score ten")
        check(body["error"] == 'field "score" must be an integer, not a string', f"score ten: {body['error']!r}")
        for score in [10.5, 1e30, True]:
            expect_error(request("POST", "/posts", {"author_id": ada["id"], "title": "x", "score": score}), 400, f"score {score}")
        for author_id in ["1", 1.5, None, True]:
            expect_error(request("POST", "/posts", {"author_id": author_id, "title": "x"}), 400, f"author_id {author_id!r}")
        bad_input(lambda body, **kw: request("POST", "/posts", body, **kw), "POST /posts",
                  {"author_id": ada["id"], "title": "x"},
                  {"title": "a string", "body": "a string", "score": "an integer", "published": "true or false"})

    patched = expect(request("PATCH", f"/posts/{post['id']}", {"title": "Notes, revised", "score": 7, "published": True}), 200, "patch a post")
    check(patched == dict(post, title="Notes, revised", score=7, published=True), f"patch: {patched}")
    with Unchanged("invalid post patches"):
        expect_error(request("PATCH", f"/posts/{post['id']}", {"author_id": 1}), 400, "author_id is not patchable",
                     'unknown field "author_id"')
        expect_error(request("PATCH", f"/posts/{post['id']}", {"title": " ", "score": 5000}), 422, "patch invalid",
                     errors={"title": ["can't be blank"], "score": ["must be less than or equal to 1000"]})
        expect_error(request("PATCH", "/posts/999999", {"title": "x"}), 404, "patch a missing post")
        bad_input(lambda body, **kw: request("PATCH", f"/posts/{post['id']}", body, **kw), "PATCH /posts/:id",
                  {"title": "y"}, {"title": "a string", "score": "an integer", "published": "true or false"})
    check(expect(request("GET", f"/posts/{post['id']}"), 200, "post after bad patches") == patched, "failed patches changed nothing")

    sql = "'; DELETE FROM \"Post\" WHERE '1'='1"
    verbatim = expect(request("POST", "/posts", {"author_id": ada["id"], "title": sql, "body": "%_\\\"'\u00e9\U0001F600"}), 201,
                      "SQL-looking post")
    check(verbatim["title"] == sql and verbatim["body"] == "%_\\\"'\u00e9\U0001F600", f"stored verbatim: {verbatim}")
    with Unchanged("a NUL character"):
        expect_error(request("POST", "/posts", {"author_id": ada["id"], "title": "a\u0000b"}), 400, "a NUL in a title",
                     'field "title" must not contain a NUL character (\\u0000)')

    bad_ids("/posts")
    return post


def test_post_list(ada):
    other = expect(request("POST", "/authors", {"name": "Other", "email": "other@example.com"}), 201, "another author")
    for score, published in [(5, True), (50, False), (500, True)]:
        expect(request("POST", "/posts", {"author_id": other["id"], "title": f"s{score}", "score": score,
                                          "published": published}), 201, f"post score {score}")

    def titles(query):
        return [p["title"] for p in expect(request("GET", "/posts?per=100&" + query), 200, query)["items"]]
    check(titles(f"author_id={other['id']}") == ["s5", "s50", "s500"], "by author, in id order")
    check(titles(f"author_id={other['id']}&published=true") == ["s5", "s500"], "published=true")
    check(titles(f"author_id={other['id']}&published=false") == ["s50"], "published=false")
    check(titles(f"author_id={other['id']}&min_score=50") == ["s50", "s500"], "min_score=50")
    check(titles(f"author_id={other['id']}&published=true&min_score=6") == ["s500"], "filters combined")
    check(titles("author_id=987654") == [], "an author with no posts")
    listed = expect(request("GET", f"/posts?author_id={other['id']}&page=2&per=2"), 200, "posts page 2")
    check(listed["total"] == 3 and listed["page"] == 2 and [p["title"] for p in listed["items"]] == ["s500"], f"page 2: {listed}")
    for query in ["author_id=abc", "author_id=0", "author_id=1%20OR%201=1", "published=yes", "published=1", "published=TRUE",
                  "min_score=abc", "min_score=1.5", "min_score=99999999999999999999", "author_id=1&author_id=2"]:
        expect_error(request("GET", "/posts?" + query), 400, f"GET /posts?{query}")

    # GET /authors/:id: the author with its posts, eager-loaded, in id order.
    shown = expect(request("GET", f"/authors/{other['id']}"), 200, "author with posts")
    check([p["title"] for p in shown["posts"]] == ["s5", "s50", "s500"], f"posts in id order: {shown['posts']}")
    ids = [p["id"] for p in shown["posts"]]
    check(ids == sorted(ids) and all(p["author_id"] == other["id"] for p in shown["posts"]), "posts are the author's")
    check(all("posts" not in a for a in expect(request("GET", "/authors?per=100"), 200, "list")["items"]), "the list has no posts")
    return other


def test_deletes(other):
    post_ids = [p["id"] for p in expect(request("GET", f"/authors/{other['id']}"), 200, "before delete")["posts"]]
    authors, posts = counts()
    expect(request("DELETE", f"/posts/{post_ids[0]}"), 204, "delete a post")
    expect_error(request("GET", f"/posts/{post_ids[0]}"), 404, "a deleted post")
    expect_error(request("DELETE", f"/posts/{post_ids[0]}"), 404, "delete it again")
    check(counts() == (authors, posts - 1), "one post fewer")
    expect(request("DELETE", f"/authors/{other['id']}"), 204, "delete an author")
    expect_error(request("GET", f"/authors/{other['id']}"), 404, "a deleted author")
    for post_id in post_ids[1:]:
        expect_error(request("GET", f"/posts/{post_id}"), 404, "its posts are gone too")
    check(expect(request("GET", f"/posts?author_id={other['id']}"), 200, "its posts")["total"] == 0, "no posts of it left")
    check(counts() == (authors - 1, posts - 3), "one author and its posts fewer")
    expect_error(request("DELETE", f"/authors/{other['id']}"), 404, "delete it again")


def test_with_posts():
    created = expect(request("POST", "/authors/with-posts", {
        "name": "Grace", "email": "grace@example.com",
        "posts": [{"title": "COBOL"}, {"title": "Compilers", "body": "A-0", "score": 9, "published": True}]}), 201, "with-posts")
    check_author(created, "Grace", "grace@example.com", "with-posts")
    check([(p["title"], p["body"], p["score"], p["published"]) for p in created["posts"]]
          == [("COBOL", "", 0, False), ("Compilers", "A-0", 9, True)], f"the posts: {created['posts']}")
    check(all(p["author_id"] == created["id"] for p in created["posts"]), "the posts belong to the new author")
    check(expect(request("GET", f"/authors/{created['id']}"), 200, "get Grace") == created, "GET shows what was created")
    none = expect(request("POST", "/authors/with-posts", {"name": "Solo", "email": "solo@example.com", "posts": []}), 201, "no posts")
    check(none["posts"] == [], "an author with no posts")

    with Unchanged("with-posts that fails"):
        expect_error(request("POST", "/authors/with-posts", {
            "name": "Hopper", "email": "hopper@example.com",
            "posts": [{"title": "fine"}, {"title": "", "score": 2000}, {"title": "fine too"}]}), 422, "an invalid post",
            "validation failed", {"posts[1].title": ["can't be blank"], "posts[1].score": ["must be less than or equal to 1000"]})
        expect_error(request("POST", "/authors/with-posts", {
            "name": "", "email": "grace@example.com", "posts": [{"title": "x" * 201}]}), 422, "invalid author and post",
            errors={"name": ["can't be blank"], "email": ["already exists"], "posts[0].title": ["is too long (maximum is 200 characters)"]})
        expect_error(request("POST", "/authors/with-posts", {
            "name": "Hopper", "email": "hopper@example.com", "posts": [{"title": "a", "admin": True}]}), 400, "unknown field in a post",
            'unknown field "posts[0].admin"')
        expect_error(request("POST", "/authors/with-posts", {
            "name": "Hopper", "email": "hopper@example.com", "posts": [{"title": "a"}, {"title": "b", "score": "ten"}]}), 400,
            "a wrong type in a post", 'field "posts[1].score" must be an integer, not a string')
        expect_error(request("POST", "/authors/with-posts", {
            "name": "Hopper", "email": "hopper@example.com", "posts": [{"title": "a", "author_id": 1}]}), 400, "author_id in a post",
            'unknown field "posts[0].author_id"')
        expect_error(request("POST", "/authors/with-posts", {
            "name": "Hopper", "email": "hopper@example.com", "posts": ["title"]}), 400, "a post that is not an object")
        expect_error(request("POST", "/authors/with-posts", {
            "name": "Hopper", "email": "hopper@example.com", "posts": {"title": "a"}}), 400, "posts not an array")
        bad_input(lambda body, **kw: request("POST", "/authors/with-posts", body, **kw), "POST /authors/with-posts",
                  {"name": "Hopper", "email": "hopper@example.com", "posts": []},
                  {"name": "a string", "email": "a string", "posts": "an array"})
    check(expect(request("GET", "/authors?name=Hopper"), 200, "Hopper")["total"] == 0, "no Hopper was written")


def test_routes():
    expect_error(request("GET", "/nowhere"), 404, "an unknown route")
    reply = request("PUT", "/authors/1", {"name": "x"})
    check(400 <= reply.status < 500, f"PUT is not a route: {reply!r}")
    expect_error(reply, reply.status, "PUT /authors/1")


def test_concurrency():
    """Requests at once: creates of distinct authors all succeed; creates of one email, one wins."""
    authors, _ = counts()
    results = []
    lock = threading.Lock()

    def create(email):
        reply = request("POST", "/authors", {"name": "Many", "email": email})
        with lock:
            results.append(reply.status)
    threads = [threading.Thread(target=create, args=(f"many{i}@example.com",)) for i in range(40)]
    threads += [threading.Thread(target=create, args=("same@example.com",)) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    check(results.count(201) == 41 and results.count(422) == 9, f"40 distinct + 1 of 10 same: {sorted(results)}")
    check(counts()[0] == authors + 41, "41 authors written")


# ---- the server ------------------------------------------------------------------------------

def die_with_parent():
    """In the child: the kernel sends SIGTERM when this script ends, however it ends."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
    except OSError:
        pass


def start(binary, database, log, *options):
    server = subprocess.Popen([binary, "--port", "0", "--database", database, *options], stdout=subprocess.PIPE,
                              stderr=log, preexec_fn=die_with_parent, text=True)
    line = [None]
    reader = threading.Thread(target=lambda: line.__setitem__(0, server.stdout.readline()), daemon=True)
    reader.start()
    reader.join(60)
    if not line[0] or not line[0].startswith("listening on http://"):
        raise Failure(f"the server did not say where it listens: {line[0]!r}")
    global port
    port = int(line[0].split()[2].rsplit(":", 1)[1])
    deadline = time.monotonic() + 30
    while True:
        try:
            if request("GET", "/health").status == 200:
                return server
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise Failure("GET /health did not answer within 30 s")
        time.sleep(0.05)


def stop(server):
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    return server.returncode


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--database", help="a SQLite path or a postgresql:// URL (default: a temporary SQLite file)")
    arguments = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    directory = tempfile.mkdtemp(prefix="ar-test-server.")
    database = arguments.database or os.path.join(directory, "server.sqlite")
    engine = "PostgreSQL" if database.startswith(("postgresql://", "postgres://")) else "SQLite"
    log_path = os.path.join(directory, "server.log")
    server = None
    started = time.monotonic()
    try:
        with open(log_path, "w") as log:
            server = start(arguments.binary, database, log)
            test_health()
            test_routes()
            ada = test_authors()
            test_author_list()
            test_posts(ada)
            other = test_post_list(ada)
            test_deletes(other)
            test_with_posts()
            test_concurrency()
            before = counts()
            status = stop(server)
            check(status == 0, f"the server stops cleanly on SIGTERM (exit {status})")
            # Again on the same database (its tables as they are), seeding 2 authors × 10 posts.
            server = start(arguments.binary, database, log, "--seed", "2")
            check(counts() == (before[0] + 2, before[1] + 20), f"--seed 2 after {before}: {counts()}")
            seeded = expect(request("GET", f"/authors?page={before[0] + 2}&per=1"), 200, "the last seeded author")["items"][0]
            check(len(expect(request("GET", f"/authors/{seeded['id']}"), 200, "seeded")["posts"]) == 10, "10 posts each")
            status = stop(server)
            check(status == 0, f"the seeded server stops cleanly (exit {status})")
        print(f"test-server: {engine}: {checks} checks passed in {time.monotonic() - started:.1f} s (port {port})")
    except (Failure, OSError, http.client.HTTPException) as error:
        print(f"test-server: {engine}: FAILED after {checks} checks: {error}", file=sys.stderr)
        if server is not None:
            stop(server)
        with open(log_path) as log:
            tail = log.read()[-4000:]
        if tail:
            print("--- the server's standard error:\n" + tail, file=sys.stderr)
        sys.exit(1)
    finally:
        if server is not None:
            stop(server)
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
