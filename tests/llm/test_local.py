"""Local models: hardware detection and the catalog, downloads through huggingface_hub from a
local hub server, and a real llama.cpp model (a tiny random-weight GGUF written here) generating
grammar-constrained strategies, directly and behind llama_cpp.server."""

import hashlib
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from spacewar_ai.llm.local import MODEL_CATALOG, Hardware, detect_hardware, ensure_model, pick_model
from spacewar_ai.pilots.sandbox import StrategyPilot, validate_source
from tests.tiny_gguf import write_tiny_llama


@pytest.mark.parametrize("vram, expected", [
    (80, "qwen2.5-72b-instruct-q5_k_m.gguf"), (40, "qwen2.5-coder-32b-instruct-q8_0.gguf"),
    (24, "qwen2.5-coder-32b-instruct-q4_k_m.gguf"), (12, "qwen2.5-coder-7b-instruct-q8_0.gguf"),
    (4, "qwen2.5-coder-3b-instruct-q4_k_m.gguf")])
def test_catalog_picks_by_gpu_memory(vram, expected):
    assert pick_model(Hardware("cuda", vram, "test")).filename == expected


def test_detect_hardware_on_this_machine_and_the_override():
    hw = detect_hardware()
    assert hw.accelerator in ("cpu", "cuda", "rocm", "metal")
    assert detect_hardware(gpu_vram=24).vram_gb == 24 and detect_hardware(24).source == "--gpu-vram"
    assert pick_model(detect_hardware(gpu_vram=0)) == MODEL_CATALOG[-1]  # CPU: the 3B model
    with pytest.raises(ValueError, match="--gpu-vram"):
        detect_hardware(gpu_vram=-1)


def test_offline_without_the_file_says_what_to_download_and_where(tmp_path):
    entry = MODEL_CATALOG[-1]
    with pytest.raises(ValueError) as err:
        ensure_model(entry, tmp_path / "models", offline=True)
    message = str(err.value)
    assert entry.filename in message and entry.repo_id in message
    assert str(tmp_path / "models" / entry.filename) in message
    present = tmp_path / "models" / entry.filename
    present.parent.mkdir()
    present.write_bytes(b"GGUF")
    assert ensure_model(entry, tmp_path / "models", offline=True) == present


class _Hub(BaseHTTPRequestHandler):
    """The two requests hf_hub_download makes for a file: HEAD for metadata, GET for bytes."""

    data = b"GGUF" + bytes(2000)

    def log_message(self, *args):
        return None

    def _head(self):
        if "/resolve/" not in self.path:
            self.send_response(404)
            self.end_headers()
            return False
        self.send_response(200)
        self.send_header("ETag", '"' + hashlib.sha256(self.data).hexdigest()[:32] + '"')
        self.send_header("X-Repo-Commit", "a" * 40)
        self.send_header("Content-Length", str(len(self.data)))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        return True

    def do_HEAD(self):
        self._head()

    def do_GET(self):
        if self._head():
            self.wfile.write(self.data)


@pytest.mark.slow
def test_download_into_models_from_a_local_hub(tmp_path):
    hub = ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    threading.Thread(target=hub.serve_forever, daemon=True).start()
    try:
        code = ("from spacewar_ai.local_llm import CatalogEntry, ensure_model\n"
                "e = CatalogEntry(0, 'Qwen/Tiny-GGUF', 'tiny.gguf', 0.001)\n"
                "print(ensure_model(e, 'models'))\n")
        env = dict(os.environ, HF_ENDPOINT=f"http://127.0.0.1:{hub.server_address[1]}",
                   HF_HUB_DISABLE_XET="1", HF_HOME=str(tmp_path / "hf"))
        env.pop("HF_HUB_OFFLINE", None)
        out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)
    finally:
        hub.shutdown()
        hub.server_close()
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "models" / "tiny.gguf").read_bytes() == _Hub.data
    assert "downloading Qwen/Tiny-GGUF/tiny.gguf" in out.stdout


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    path = write_tiny_llama(tmp_path_factory.mktemp("gguf") / "tiny.gguf")
    assert path.stat().st_size < 1_000_000
    return path


def test_tiny_gguf_is_a_readable_llama_model(tiny_model):
    import gguf

    reader = gguf.GGUFReader(str(tiny_model))
    arch = reader.fields["general.architecture"]
    assert bytes(arch.parts[arch.data[0]]).decode() == "llama"
    assert len(reader.tensors) == 3 + 2 * 9


def test_grammar_constrained_local_generation_always_gives_a_valid_strategy(tiny_model):
    pytest.importorskip("llama_cpp", reason="the local-llm extra is not installed")
    from spacewar_ai.llm.local import LocalLLMClient

    messages = [{"role": "user", "content": "Write a Spacewar! pilot."}]
    sources = []
    for seed in range(3):
        client = LocalLLMClient(tiny_model, n_ctx=2048, n_gpu_layers=0, seed=seed)
        reply = client.generate(messages, max_tokens=1200, temperature=1.0)
        from spacewar_ai.llm.strategies import extract_code

        sources.append(extract_code(reply))
    for k, source in enumerate(sources):
        validate_source(source, f"local{k}.py")  # parses and passes the allow-list
    path = tiny_model.parent / "local0.py"
    path.write_text(sources[0])
    pilot = StrategyPilot(path)
    try:
        pilot.reset(np.ones(4, dtype=bool))
        actions = pilot.act(np.random.default_rng(0).uniform(-1, 1, (4, 36)))
        assert pilot.forfeits() == {} and set(actions) <= set(range(6))
    finally:
        pilot.close()


def test_llama_cpp_server_serves_the_openai_compatible_client(tiny_model, tmp_path):
    pytest.importorskip("llama_cpp", reason="the local-llm extra is not installed")
    pytest.importorskip("fastapi", reason="llama_cpp.server needs the [server] extra")
    from spacewar_ai.llm.clients import OpenAICompatibleClient

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model",
                               str(tiny_model), "--host", "127.0.0.1", "--port", str(port),
                               "--n_ctx", "1024"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        client = OpenAICompatibleClient("llamacpp", None, "tiny", f"http://127.0.0.1:{port}/v1",
                                        timeout=30, retries=0)
        deadline = time.time() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.time() > deadline or server.poll() is not None:
                    pytest.fail("llama_cpp.server did not start")
                time.sleep(0.3)
        text = client.generate([{"role": "user", "content": "hello"}], max_tokens=16)
        assert isinstance(text, str) and len(text) > 0
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_a_failed_download_is_reported_in_whole_words(tmp_path, monkeypatch):
    import huggingface_hub

    from spacewar_ai.llm.local import CatalogEntry, ensure_model

    said = ("An error happened while trying to locate the file on the Hub and we cannot find the "
            "requested files in the local cache. Please check your connection and try again or "
            "make sure your Internet connection is on.")

    def offline(**kwargs):
        raise OSError(said)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", offline)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with pytest.raises(ValueError) as exc:
        ensure_model(CatalogEntry(0, "Qwen/Tiny-GGUF", "tiny.gguf", 0.001), tmp_path)
    message = str(exc.value)
    assert said in message and "tiny.gguf" in message and str(tmp_path) in message


def test_without_llama_cpp_the_refusal_names_the_model_it_would_run(tmp_path):
    import importlib.util

    from spacewar_ai.llm.local import LocalLLMClient

    if importlib.util.find_spec("llama_cpp") is not None:
        pytest.skip("llama-cpp-python is installed: nothing is refused")
    with pytest.raises(ValueError) as exc:
        LocalLLMClient.from_flags(gpu_vram=0, models_dir=tmp_path)
    message = str(exc.value)
    assert "pip install" in message and ".gguf" in message and str(tmp_path) in message
    with pytest.raises(ValueError, match="the model file my.gguf"):
        LocalLLMClient.from_flags("my.gguf")
