"""Python clients against the gateway, by base URL only (run by test/clients-python.test.ts).

Usage: python_clients.py BASE_URL API_KEY. Prints one JSON line per check:
{"client", "feature", "ok", "error"?, "detail"?}. Every check asserts what a user would look at.
"""

import base64
import json
import os
import sys
import traceback

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch at import

BASE, KEY = sys.argv[1], sys.argv[2]
LOCAL = "local/stories260k"
MINILM = "local/all-minilm-l6-v2"


def check(client, feature):
    def wrap(fn):
        try:
            detail = fn()
            print(json.dumps({"client": client, "feature": feature, "ok": True, "detail": detail}), flush=True)
        except Exception as e:  # noqa: BLE001 - every failure is a row of the table
            tb = traceback.format_exc(limit=3)
            print(json.dumps({"client": client, "feature": feature, "ok": False, "error": f"{type(e).__name__}: {e}"[:300], "trace": tb[-800:]}), flush=True)
        return fn

    return wrap


import openai  # noqa: E402

oa = openai.OpenAI(api_key=KEY, base_url=f"{BASE}/v1", max_retries=0)


@check("openai (Python)", "chat")
def _():
    r = oa.chat.completions.create(model=LOCAL, messages=[{"role": "user", "content": "Once upon a time"}], max_tokens=8)
    assert r.choices[0].message.content, r
    assert r.usage.completion_tokens > 0
    return r.usage.completion_tokens


@check("openai (Python)", "streaming")
def _():
    parts = []
    usage = None
    for c in oa.chat.completions.create(
        model=LOCAL, messages=[{"role": "user", "content": "Once upon a time"}], max_tokens=8, stream=True, stream_options={"include_usage": True}
    ):
        if c.choices and c.choices[0].delta.content:
            parts.append(c.choices[0].delta.content)
        if c.usage:
            usage = c.usage
    assert len(parts) > 1 and usage and usage.completion_tokens > 0
    return len(parts)


@check("openai (Python)", "embeddings")
def _():
    r = oa.embeddings.create(model=MINILM, input=["a cat", "a dog"])
    assert len(r.data) == 2 and len(r.data[0].embedding) == 384
    return r.usage.prompt_tokens


@check("openai (Python)", "images")
def _():
    r = oa.images.generate(model="openai/gpt-image-1", prompt="a red square", n=1)
    png = base64.b64decode(r.data[0].b64_json)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return len(png)


@check("openai (Python)", "speech")
def _():
    r = oa.audio.speech.create(model="local/espeak", voice="alloy", input="Hello there.", response_format="wav")
    audio = r.read()
    assert audio[:4] == b"RIFF" and audio[8:12] == b"WAVE"
    return len(audio)


@check("openai (Python)", "transcription")
def _():
    import io
    import struct

    rate, seconds = 8000, 1.5
    samples = int(rate * seconds)
    wav = io.BytesIO()
    wav.write(b"RIFF" + struct.pack("<I", 36 + samples * 2) + b"WAVEfmt ")
    wav.write(struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16))
    wav.write(b"data" + struct.pack("<I", samples * 2) + b"\x00\x00" * samples)
    r = oa.audio.transcriptions.create(model="whisper-1", file=("speech.wav", wav.getvalue(), "audio/wav"))
    assert r.text == "hello from the loopback", r
    srt = oa.audio.transcriptions.create(model="whisper-1", file=("speech.wav", wav.getvalue(), "audio/wav"), response_format="srt")
    assert srt.startswith("1\n00:00:00,000 --> "), srt
    return r.text


@check("openai (Python)", "model discovery")
def _():
    ids = [m.id for m in oa.models.list()]
    assert LOCAL in ids
    assert oa.models.retrieve(LOCAL).id == LOCAL
    return len(ids)


@check("openai (Python)", "responses")
def _():
    r = oa.responses.create(model=LOCAL, input="Once upon a time", max_output_tokens=8)
    assert r.output_text
    items = list(oa.responses.input_items.list(r.id))
    assert items[0].content[0].text == "Once upon a time"
    return r.usage.output_tokens


import anthropic  # noqa: E402

an = anthropic.Anthropic(api_key=KEY, base_url=f"{BASE}/api", max_retries=0)


@check("anthropic (Python)", "chat")
def _():
    r = an.messages.create(model=LOCAL, max_tokens=8, messages=[{"role": "user", "content": "Once upon a time"}])
    assert r.content[0].text and r.stop_reason == "max_tokens"
    return r.usage.output_tokens


@check("anthropic (Python)", "streaming")
def _():
    with an.messages.stream(model=LOCAL, max_tokens=8, messages=[{"role": "user", "content": "Once upon a time"}]) as s:
        text = "".join(s.text_stream)
        final = s.get_final_message()
    assert text and final.usage.output_tokens > 0
    return final.usage.output_tokens


@check("anthropic (Python)", "model discovery")
def _():
    ids = [m.id for m in an.models.list(limit=5)]
    assert LOCAL in ids
    assert an.models.retrieve(LOCAL).display_name
    return len(ids)


import litellm  # noqa: E402


@check("litellm (Python)", "chat (openai/...)")
def _():
    r = litellm.completion(model=f"openai/{LOCAL}", api_base=f"{BASE}/api/v1", api_key=KEY, messages=[{"role": "user", "content": "Once upon a time"}], max_tokens=8)
    assert r.choices[0].message.content
    return r.usage.completion_tokens


@check("litellm (Python)", "streaming (openai/...)")
def _():
    parts = [
        c.choices[0].delta.content
        for c in litellm.completion(
            model=f"openai/{LOCAL}", api_base=f"{BASE}/api/v1", api_key=KEY, messages=[{"role": "user", "content": "Once upon a time"}], max_tokens=8, stream=True
        )
        if c.choices and c.choices[0].delta.content
    ]
    assert len(parts) > 1
    return len(parts)


@check("litellm (Python)", "chat (nano-gpt/...)")
def _():
    r = litellm.completion(model=f"nano-gpt/{LOCAL}", api_base=f"{BASE}/api/v1", api_key=KEY, messages=[{"role": "user", "content": "Once upon a time"}], max_tokens=8)
    assert r.choices[0].message.content
    return r.usage.completion_tokens


@check("litellm (Python)", "chat (anthropic/...)")
def _():
    r = litellm.completion(model=f"anthropic/{LOCAL}", api_base=f"{BASE}/api", api_key=KEY, messages=[{"role": "user", "content": "Once upon a time"}], max_tokens=8)
    assert r.choices[0].message.content
    return r.usage.completion_tokens


@check("litellm (Python)", "embeddings (openai/...)")
def _():
    r = litellm.embedding(model=f"openai/{MINILM}", api_base=f"{BASE}/api/v1", api_key=KEY, input=["a cat"])
    assert len(r.data[0]["embedding"]) == 384
    return r.usage.prompt_tokens
