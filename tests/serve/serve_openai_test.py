"""The official openai Python client and curl against `agentcompile serve --cpu` with SmolLM2-135M:
chat and completions, streaming and not, usage in every answer, seeds, stop strings, log-probabilities,
the models list, and the API key (401 without it). Skips (77) without SmolLM2 or the openai package.

    python3 tests/serve/serve_openai_test.py --cli build/agentcompile
"""
import json
import os
import shutil
import subprocess
import unittest

import serve_harness
from serve_harness import CONFIG, Server

KEY = "sk-serve-test-0123456789abcdef"
QUESTION = "What is the capital of France?"


class OpenAIClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import openai
        cls.server = Server(CONFIG["cli"], CONFIG["model"], "--max-context", "512", "--api-key-env", "SERVE_TEST_KEY",
                            env={"SERVE_TEST_KEY": KEY})
        cls.client = openai.OpenAI(base_url=cls.server.base_url + "/v1", api_key=KEY, max_retries=0, timeout=120)
        cls.model = cls.client.models.list().data[0].id

    @classmethod
    def tearDownClass(cls):
        log = cls.server.log()
        code = cls.server.stop()
        cls.server.close()
        # The key, the prompts and the answers never reach the log without --log-requests.
        assert KEY not in log, "the API key is in the server's log"
        assert QUESTION not in log and "Paris" not in log, "a prompt or an answer is in the server's log"
        assert code == 0, f"exit code {code}"

    def test_models_list_names_the_served_model(self):
        models = self.client.models.list()
        self.assertEqual(len(models.data), 1)
        self.assertEqual(models.data[0].id, "SmolLM2-135M-Instruct.Q4_1")
        self.assertEqual(self.client.models.retrieve(self.model).id, self.model)

    def test_chat_answers_with_usage(self):
        answer = self.client.chat.completions.create(model=self.model, messages=[{"role": "user", "content": QUESTION}],
                                                     max_tokens=12, temperature=0)
        self.assertEqual(answer.object, "chat.completion")
        self.assertIn("Paris", answer.choices[0].message.content)
        self.assertEqual(answer.choices[0].message.role, "assistant")
        self.assertIn(answer.choices[0].finish_reason, ("stop", "length"))
        self.assertGreater(answer.usage.prompt_tokens, 10)
        self.assertGreater(answer.usage.completion_tokens, 0)
        self.assertEqual(answer.usage.total_tokens, answer.usage.prompt_tokens + answer.usage.completion_tokens)

    def test_concurrent_requests_get_what_each_gets_alone(self):
        """Four requests at once share each batched step (one decode_batch call over their rows, prompt chunks
        and decode tokens mixed); each gets the greedy text it gets when it runs alone."""
        import threading
        prompts = ["The capital of France is", "One, two, three,", "def fibonacci(n):", "Once upon a time"]

        def ask(prompt):
            return self.client.completions.create(model=self.model, prompt=prompt, max_tokens=12, temperature=0).choices[0].text

        alone = [ask(p) for p in prompts]
        together, threads = [None] * len(prompts), []
        for i, prompt in enumerate(prompts):
            threads.append(threading.Thread(target=lambda i=i, prompt=prompt: together.__setitem__(i, ask(prompt))))
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=240)
        self.assertEqual(together, alone)

    def test_chat_streams_the_same_greedy_answer(self):
        messages = [{"role": "user", "content": QUESTION}]
        whole = self.client.chat.completions.create(model=self.model, messages=messages, max_tokens=10, temperature=0)
        stream = self.client.chat.completions.create(model=self.model, messages=messages, max_tokens=10, temperature=0,
                                                     stream=True, stream_options={"include_usage": True})
        pieces, finish, usage, roles = [], None, None, []
        for chunk in stream:
            if chunk.usage:
                usage = chunk.usage
            for choice in chunk.choices:
                if choice.delta.role:
                    roles.append(choice.delta.role)
                if choice.delta.content:
                    pieces.append(choice.delta.content)
                finish = choice.finish_reason or finish
        self.assertEqual(roles, ["assistant"])
        self.assertGreater(len(pieces), 1, "the answer came in pieces")
        self.assertEqual("".join(pieces), whole.choices[0].message.content)
        self.assertEqual(finish, whole.choices[0].finish_reason)
        self.assertEqual(usage.completion_tokens, whole.usage.completion_tokens)

    def test_completions_streaming_and_not(self):
        whole = self.client.completions.create(model=self.model, prompt="The sky is", max_tokens=6, temperature=0)
        self.assertEqual(whole.object, "text_completion")
        self.assertEqual(whole.usage.completion_tokens, 6)
        self.assertEqual(whole.choices[0].finish_reason, "length")
        streamed = "".join(c.choices[0].text for c in self.client.completions.create(
            model=self.model, prompt="The sky is", max_tokens=6, temperature=0, stream=True) if c.choices)
        self.assertEqual(streamed, whole.choices[0].text)

    def test_a_seed_repeats_a_sampled_answer(self):
        def sample(seed):
            return self.client.completions.create(model=self.model, prompt="My favourite animal is", max_tokens=8,
                                                  temperature=1.2, top_p=0.95, seed=seed).choices[0].text
        first = sample(11)
        self.assertEqual(sample(11), first)
        self.assertNotEqual({sample(12), sample(13)}, {first}, "other seeds sample other text")

    def test_stop_strings_end_the_answer_before_them(self):
        whole = self.client.completions.create(model=self.model, prompt="1, 2, 3, 4,", max_tokens=12, temperature=0)
        text = whole.choices[0].text
        self.assertIn("6", text, f"the model counts on: {text!r}")
        cut = self.client.completions.create(model=self.model, prompt="1, 2, 3, 4,", max_tokens=12, temperature=0, stop=["6"])
        self.assertEqual(cut.choices[0].text, text[:text.index("6")])
        self.assertEqual(cut.choices[0].finish_reason, "stop")
        streamed = "".join(c.choices[0].text for c in self.client.completions.create(
            model=self.model, prompt="1, 2, 3, 4,", max_tokens=12, temperature=0, stop=["6"], stream=True) if c.choices)
        self.assertEqual(streamed, cut.choices[0].text, "no part of the stop string was streamed")

    def test_logprobs(self):
        answer = self.client.chat.completions.create(model=self.model, messages=[{"role": "user", "content": "Hi"}], max_tokens=4,
                                                     temperature=0, logprobs=True, top_logprobs=3)
        entries = answer.choices[0].logprobs.content
        self.assertEqual(len(entries), answer.usage.completion_tokens - (answer.choices[0].finish_reason == "stop"))
        for entry in entries:
            self.assertLessEqual(entry.logprob, 0)
            self.assertEqual(len(entry.top_logprobs), 3)
            # Greedy: the sampled token is the most likely one.
            self.assertEqual(entry.top_logprobs[0].token, entry.token)
            self.assertAlmostEqual(entry.top_logprobs[0].logprob, entry.logprob, places=5)
        self.assertEqual("".join(bytes(e.bytes).decode("utf-8", "replace") for e in entries), answer.choices[0].message.content)

    def test_penalties_change_a_repetitive_answer(self):
        prompt = "Repeat after me: la la la la la la la la"
        plain = self.client.completions.create(model=self.model, prompt=prompt, max_tokens=10, temperature=0).choices[0].text
        penalized = self.client.completions.create(model=self.model, prompt=prompt, max_tokens=10, temperature=0,
                                                   frequency_penalty=2.0, presence_penalty=2.0).choices[0].text
        self.assertNotEqual(plain, penalized)

    def test_errors_are_openai_errors(self):
        import openai
        with self.assertRaises(openai.BadRequestError) as caught:
            self.client.chat.completions.create(model=self.model, messages=[{"role": "user", "content": "Hi"}], max_tokens=0)
        self.assertEqual(caught.exception.body["param"], "max_tokens")
        with self.assertRaises(openai.BadRequestError) as caught:
            self.client.completions.create(model=self.model, prompt="word " * 600, max_tokens=4)
        self.assertEqual(caught.exception.body["code"], "context_length_exceeded")
        bad = openai.OpenAI(base_url=self.server.base_url + "/v1", api_key="sk-wrong", max_retries=0)
        with self.assertRaises(openai.AuthenticationError):
            bad.models.list()

    @unittest.skipUnless(shutil.which("curl"), "curl is not installed")
    def test_curl_streaming_and_not(self):
        url = self.server.base_url + "/v1/chat/completions"
        body = {"messages": [{"role": "user", "content": QUESTION}], "max_tokens": 8, "temperature": 0}
        auth = ["-H", "Authorization: Bearer " + KEY]
        out = subprocess.run(["curl", "-sS", "--fail-with-body", url, *auth, "-H", "Content-Type: application/json",
                              "-d", json.dumps(body)], capture_output=True, text=True, check=True).stdout
        whole = json.loads(out)
        self.assertEqual(whole["object"], "chat.completion")
        self.assertIn("usage", whole)
        out = subprocess.run(["curl", "-sSN", "--fail-with-body", url, *auth, "-H", "Content-Type: application/json",
                              "-d", json.dumps({**body, "stream": True})], capture_output=True, text=True, check=True).stdout
        events = [line[6:] for line in out.split("\n") if line.startswith("data: ")]
        self.assertEqual(events[-1], "[DONE]")
        chunks = [json.loads(e) for e in events[:-1]]
        self.assertTrue(all(c["object"] == "chat.completion.chunk" for c in chunks))
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
        self.assertEqual(text, whole["choices"][0]["message"]["content"])
        unauthorized = subprocess.run(["curl", "-sS", "-o", os.devnull, "-w", "%{http_code}", url, "-d", json.dumps(body)],
                                      capture_output=True, text=True).stdout
        self.assertEqual(unauthorized, "401")


if __name__ == "__main__":
    serve_harness.main(needs_openai=True)
