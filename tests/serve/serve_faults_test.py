"""Faults and bad input against `agentcompile serve --cpu` with SmolLM2-135M: malformed JSON, fields of
the wrong type, unknown fields, a prompt longer than the context, max_tokens 0 and huge, an invalid UTF-8
body, a client that disconnects mid-stream (its slot freed within a step), 100 connections that send
nothing, a full queue (429), SIGTERM during generation (in-flight requests finish, or end with an error
event after the drain timeout, then exit 0), the logging policy, and a bounded soak in which every
request ends with a complete answer or an error. Each refusal must be an OpenAI error object and the
server must go on serving. Standard library only; skips (77) without SmolLM2.

    python3 tests/serve/serve_faults_test.py --cli build/agentcompile
"""
import json
import random
import socket
import threading
import time
import unittest

import serve_harness
from serve_harness import CONFIG, Server, open_stream, read_events

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"


def chat_body(text="Hi", **fields):
    return {"messages": [{"role": "user", "content": text}], **fields}


class FaultsTest(unittest.TestCase):
    """One server: 2 sequences at once, 2 more may wait, a context of 256."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(CONFIG["cli"], CONFIG["model"], "--max-concurrency", "2", "--max-queue", "2", "--max-context", "256")

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        cls.server.close()
        assert code == 0, f"exit code {code}"

    def assert_error(self, status, body, expected_status, param=None):
        self.assertEqual(status, expected_status, body)
        self.assertIn("error", body)
        error = body["error"]
        self.assertEqual(set(error), {"message", "type", "param", "code"})
        self.assertTrue(error["message"])
        if param is not None:
            self.assertEqual(error["param"], param, error["message"])

    def assert_still_serving(self):
        status, body = self.server.post_json(COMPLETIONS, {"prompt": "Hello", "max_tokens": 2, "temperature": 0})
        self.assertEqual(status, 200, f"{body}\nserver log:\n{self.server.log()[-4000:]}")
        self.assertEqual(body["usage"]["completion_tokens"], 2)

    def test_malformed_json(self):
        for raw in [b"{", b"{\"messages\": [", b"not json", b"", b"[1, 2, 3]", b"{\"messages\": []} {}"]:
            status, _, data = self.server.request("POST", CHAT, raw)
            self.assert_error(status, json.loads(data), 400)
        self.assert_still_serving()

    def test_invalid_utf8_body(self):
        status, _, data = self.server.request("POST", CHAT, b'{"messages": [{"role": "user", "content": "caf\xe9 \xff\xfe"}]}')
        self.assert_error(status, json.loads(data), 400)
        self.assert_still_serving()

    def test_wrong_types_and_unknown_fields(self):
        cases = [
            (chat_body(max_tokens="8"), "max_tokens"),
            (chat_body(temperature=[1]), "temperature"),
            (chat_body(stream="true"), "stream"),
            (chat_body(stop={"a": 1}), "stop"),
            (chat_body(seed=1.5), "seed"),
            (chat_body(frobnicate=True), "frobnicate"),
            ({"messages": [{"role": "user", "content": 12}]}, "messages[0].content"),
            ({"messages": "Hi"}, "messages"),
        ]
        for body, param in cases:
            status, answer = self.server.post_json(CHAT, body)
            self.assert_error(status, answer, 400, param)
        self.assert_still_serving()

    def test_prompt_longer_than_the_context_and_max_tokens_zero_or_huge(self):
        status, body = self.server.post_json(COMPLETIONS, {"prompt": "word " * 400, "max_tokens": 4})
        self.assert_error(status, body, 400, "prompt")
        self.assertEqual(body["error"]["code"], "context_length_exceeded")
        status, body = self.server.post_json(CHAT, chat_body(max_tokens=0))
        self.assert_error(status, body, 400, "max_tokens")
        for huge in [10**6, 2**63 - 1, 2**64 + 5]:
            status, body = self.server.post_json(CHAT, chat_body(max_tokens=huge))
            self.assert_error(status, body, 400, "max_tokens")
        self.assert_still_serving()

    def test_unknown_routes_and_methods_are_error_objects(self):
        status, _, data = self.server.request("GET", "/v1/nothing")
        self.assert_error(status, json.loads(data), 404)
        status, _, data = self.server.request("GET", "/v1/models/other-model")
        self.assert_error(status, json.loads(data), 404)

    def test_disconnect_mid_stream_frees_the_slot(self):
        before = self.server.metrics()
        conn, response = open_stream(self.server, COMPLETIONS, {"prompt": "Once upon a time", "max_tokens": 200, "stream": True})
        self.assertEqual(response.status, 200)
        events = read_events(response)
        next(events)
        next(events)  # two pieces came: the sequence is generating
        self.assertEqual(self.server.metrics()["agentcompile_serve_requests_running"], 1)
        conn.sock.shutdown(socket.SHUT_RDWR)
        conn.close()
        gone = time.time()
        self.server.wait_until(lambda: self.server.metrics()["agentcompile_serve_requests_running"] == 0, timeout=10, what="the slot to be freed")
        after = self.server.metrics()
        freed_in = time.time() - gone
        self.assertEqual(after["agentcompile_serve_client_disconnects_total"], before["agentcompile_serve_client_disconnects_total"] + 1)
        generated = after["agentcompile_serve_completion_tokens_total"] - before["agentcompile_serve_completion_tokens_total"]
        self.assertLess(generated, 50, "generation stopped soon after the client left")
        print(f"  slot freed {freed_in * 1000:.0f} ms after the disconnect, {generated:.0f} tokens generated in all")
        self.assert_still_serving()

    def test_idle_connections_do_not_block_service(self):
        idle = [socket.create_connection(("127.0.0.1", self.server.port)) for _ in range(100)]
        try:
            start = time.time()
            self.assert_still_serving()
            status, _, _ = self.server.request("GET", "/health")
            self.assertEqual(status, 200)
            self.assertLess(time.time() - start, 10)
        finally:
            for s in idle:
                s.close()

    def test_requests_beyond_the_queue_get_429(self):
        # 2 running + 2 waiting fill the server; the fifth is refused at once.
        streams = []
        try:
            for _ in range(4):
                streams.append(open_stream(self.server, COMPLETIONS, {"prompt": "Tell me a story", "max_tokens": 200, "stream": True}))
            for conn, response in streams:
                self.assertEqual(response.status, 200)
            start = time.time()
            status, body = self.server.post_json(COMPLETIONS, {"prompt": "Hi", "max_tokens": 2})
            self.assert_error(status, body, 429)
            self.assertEqual(body["error"]["type"], "rate_limit_error")
            self.assertLess(time.time() - start, 2, "refused at once, not after waiting")
        finally:
            for conn, _ in streams:
                conn.sock.shutdown(socket.SHUT_RDWR)
                conn.close()
        self.server.wait_idle()
        self.assert_still_serving()

class SoakTest(unittest.TestCase):
    """Its own server, with room for most of the load: 4 sequences at once and 8 waiting."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(CONFIG["cli"], CONFIG["model"], "--max-concurrency", "4", "--max-queue", "8", "--max-context", "256")

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        cls.server.close()
        assert code == 0, f"exit code {code}"

    def assert_still_serving(self):
        status, body = self.server.post_json(COMPLETIONS, {"prompt": "Hello", "max_tokens": 2, "temperature": 0})
        self.assertEqual(status, 200, body)

    def test_soak_loses_no_request(self):
        """A bounded mixed load: every request ends with a complete answer, or an error object."""
        rng = random.Random(5)
        kinds = [rng.choice(["chat", "chat-stream", "completion", "completion-stream", "bad", "disconnect"]) for _ in range(24)]
        outcomes, lock = [], threading.Lock()

        def streamed(path, body):
            """(status, ok) of a streaming request read to its end."""
            conn, response = open_stream(self.server, path, body)
            try:
                if response.status != 200:
                    return response.status, "error" in json.loads(response.read())
                events = list(read_events(response))
                chunks = [json.loads(e) for e in events[:-1]]
                ends = [c for c in chunks if c.get("choices") and c["choices"][0].get("finish_reason")]
                return 200, events[-1] == "[DONE]" and len(ends) == 1 and not any("error" in c for c in chunks)
            finally:
                conn.close()

        def one(index, kind):
            status, ok = None, False
            try:
                if kind == "bad":
                    status, body = self.server.post_json(CHAT, {"messages": 5})
                    ok = status == 400 and "error" in body
                elif kind == "disconnect":  # gone as soon as the headers came
                    conn, response = open_stream(self.server, COMPLETIONS, {"prompt": f"Story {index}", "max_tokens": 100, "stream": True})
                    status, ok = response.status, response.status in (200, 429)
                    conn.close()
                elif kind.endswith("stream"):
                    path = CHAT if kind.startswith("chat") else COMPLETIONS
                    body = chat_body(f"Count to {index}") if path == CHAT else {"prompt": f"Count to {index}:"}
                    status, ok = streamed(path, {**body, "max_tokens": 4, "stream": True})
                else:
                    path = CHAT if kind == "chat" else COMPLETIONS
                    body = chat_body(f"Say {index}") if path == CHAT else {"prompt": f"Say {index}:"}
                    status, answer = self.server.post_json(path, {**body, "max_tokens": 4})
                    ok = (status == 200 and answer["choices"][0]["finish_reason"] in ("stop", "length")
                          and answer["usage"]["completion_tokens"] >= 1) or (status == 429 and "error" in answer)
            except Exception as e:  # a lost request: neither an answer nor an error object
                kind = f"{kind}: {e!r}"
            with lock:
                outcomes.append((kind, status, ok))

        threads = [threading.Thread(target=one, args=(i, kind)) for i, kind in enumerate(kinds)]
        start = time.time()
        for t in threads:
            t.start()
            time.sleep(0.05)
        for t in threads:
            t.join(timeout=240)
        self.assertTrue(all(not t.is_alive() for t in threads), "a request never ended")
        statuses = [status for _, status, _ in outcomes]
        print(f"  soak: {len(outcomes)} requests in {time.time() - start:.1f} s; "
              f"statuses {dict((s, statuses.count(s)) for s in sorted(set(statuses), key=str))}")
        self.assertEqual([kind for kind, _, ok in outcomes if not ok], [])
        self.assertEqual(len(outcomes), len(kinds))
        self.assertGreaterEqual(statuses.count(200), len(kinds) // 2, "most requests were answered, not refused")
        self.server.wait_idle()
        self.assert_still_serving()


class ShutdownTest(unittest.TestCase):
    def test_sigterm_lets_a_generation_finish_then_exits_0(self):
        server = Server(CONFIG["cli"], CONFIG["model"], "--max-context", "256")
        try:
            conn, response = open_stream(server, COMPLETIONS, {"prompt": "Once upon a time", "max_tokens": 12, "stream": True, "temperature": 0})
            events = read_events(response)
            first = next(events)
            server.process.send_signal(15)
            server.wait_until(lambda: "received SIGTERM" in server.log(), timeout=10, what="the signal")
            status, body = server.post_json(COMPLETIONS, {"prompt": "Hi", "max_tokens": 2})
            self.assertEqual(status, 503)
            self.assertEqual(body["error"]["code"], "shutting_down")
            rest = [first, *events]
            self.assertEqual(rest[-1], "[DONE]")
            self.assertEqual(json.loads(rest[-2])["choices"][0]["finish_reason"], "length", "the generation ran to its end")
            self.assertEqual(server.process.wait(30), 0)
            conn.close()
        finally:
            server.close()

    def test_sigterm_past_the_drain_timeout_ends_generation_with_an_error_event(self):
        server = Server(CONFIG["cli"], CONFIG["model"], "--max-context", "2048", "--drain-timeout", "1")
        try:
            conn, response = open_stream(server, COMPLETIONS, {"prompt": "Once upon a time", "max_tokens": 2000, "stream": True})
            events = read_events(response)
            next(events)
            server.process.send_signal(15)
            rest = list(events)
            self.assertEqual(rest[-1], "[DONE]")
            error = json.loads(rest[-2])["error"]
            self.assertEqual(error["type"], "server_error")
            self.assertIn("shutting down", error["message"])
            self.assertEqual(server.process.wait(30), 0)
            conn.close()
        finally:
            server.close()


class LoggingTest(unittest.TestCase):
    def test_prompts_and_completions_are_logged_only_when_asked(self):
        secret = "zebra-violet-7391"
        for flags, logged in [([], False), (["--log-requests"], True)]:
            server = Server(CONFIG["cli"], CONFIG["model"], "--max-context", "256", *flags)
            try:
                status, body = server.post_json(CHAT, chat_body(f"Repeat: {secret}", max_tokens=6, temperature=0))
                self.assertEqual(status, 200)
                answer = body["choices"][0]["message"]["content"]
                self.assertEqual(server.stop(), 0)
                log = server.log()
                self.assertIn("POST /v1/chat/completions 200", log)
                self.assertEqual(secret in log, logged, log)
                if answer.strip():
                    self.assertEqual(answer in log, logged, log)
            finally:
                server.close()


if __name__ == "__main__":
    serve_harness.main()
