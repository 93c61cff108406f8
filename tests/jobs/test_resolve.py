"""Bad jobs fail before any work with a message that says what to fix; good ones resolve fully."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from pipeline.errors import ConfigError
from pipeline.jobs import load_job, parse_job
from tests.cases import CASES
from tests.engine.helpers import write_job, write_jsonl

OK_OUTPUT = {"path": "run", "target": "chat"}


@pytest.fixture
def src(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "in.jsonl", [orjson.dumps(r) for _, r in CASES["responses"]])


def _fails(tmp_path: Path, match: str, **kw: object) -> None:
    args = {"inputs": [{"path": "in.jsonl", "format": "responses"}], "output": OK_OUTPUT, **kw}
    job = write_job(tmp_path / "job.toml", **args)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=match):
        load_job(job)
    assert not (tmp_path / "run").exists(), "a bad job must not create its run directory"


def test_a_good_job_resolves_globs_sorted_relative_to_the_job_file(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    for name in ("b.jsonl", "a.jsonl"):
        write_jsonl(tmp_path / "data" / name, [b"{}"])
    job = load_job(write_job(tmp_path / "job.toml", [{"path": "data/*.jsonl", "format": "chat"}], OK_OUTPUT))
    assert [Path(f.url).name for f in job.files] == ["a.jsonl", "b.jsonl"]
    assert all(f.container == "jsonl" and f.format == "chat" for f in job.files)
    assert job.run_dir == (tmp_path / "run").resolve()
    assert (job.target, job.workers, job.engine, job.shard_records) == ("chat", 2, "local", 10_000)


def test_invalid_toml(tmp_path: Path) -> None:
    (tmp_path / "job.toml").write_text("name = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_job(tmp_path / "job.toml")


def test_missing_job_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the job file"):
        load_job(tmp_path / "nope.toml")


def test_unknown_key_is_named(src: Path, tmp_path: Path) -> None:
    _fails(tmp_path, r"output\.shards_records: unknown key", output={**OK_OUTPUT, "shards_records": 5})


def test_missing_output_section(src: Path, tmp_path: Path) -> None:
    _fails(tmp_path, "output: required key is missing", output={})


def test_bad_shard_size(src: Path, tmp_path: Path) -> None:
    _fails(tmp_path, r"output\.shard_records: Input should be greater than or equal to 1",
           output={**OK_OUTPUT, "shard_records": 0})  # fmt: skip


def test_glob_matching_nothing(src: Path, tmp_path: Path) -> None:
    _fails(tmp_path, r"'logs/\*\.jsonl' matches no file", inputs=[{"path": "logs/*.jsonl", "format": "chat"}])


def test_unknown_format(src: Path, tmp_path: Path) -> None:
    _fails(tmp_path, "unknown format 'openai'; use one of responses, chat",
           inputs=[{"path": "in.jsonl", "format": "openai"}])  # fmt: skip


def test_unknown_format_lists_each_format_once(src: Path, tmp_path: Path) -> None:
    job = write_job(tmp_path / "job.toml", [{"path": "in.jsonl", "format": "openai"}], OK_OUTPUT)
    with pytest.raises(ConfigError) as e:
        load_job(job)
    names = str(e.value).split("use one of ", 1)[1].split(", ")
    assert "sharegpt" in names and len(names) == len(set(names)), names


def test_unknown_target(src: Path, tmp_path: Path) -> None:
    _fails(tmp_path, "output.target 'csv' is not a format", output={"path": "run", "target": "csv"})


def test_canonical_format_on_jsonl(src: Path, tmp_path: Path) -> None:
    _fails(tmp_path, "format 'canonical' reads chatlake Parquet",
           inputs=[{"path": "in.jsonl", "format": "canonical"}])  # fmt: skip


def test_unknown_loss_kind(src: Path, tmp_path: Path) -> None:
    _fails(tmp_path, r"loss: unknown loss kinds \['itemid'\]", loss={"allow": ["itemid"]})


def test_bad_on_loss(src: Path, tmp_path: Path) -> None:
    _fails(tmp_path, r"loss\.on_loss: Input should be 'allow' or 'reject'", loss={"on_loss": "drop"})


def test_output_that_would_overwrite_the_input(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    write_jsonl(tmp_path / "run" / "in.jsonl", [b"{}"])
    job = write_job(tmp_path / "job.toml", [{"path": "run/*.jsonl", "format": "chat"}], OK_OUTPUT)
    with pytest.raises(ConfigError, match="would overwrite the input"):
        load_job(job)


def test_output_on_a_store_that_cannot_be_reached_is_refused(
    src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, closed_port: int
) -> None:
    """A run directory at a URL is checked before any work (engine/remote.py writes it)."""
    import fsspec

    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{closed_port}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("CHATLAKE_CACHE", str(tmp_path / "cache"))
    fsspec.get_filesystem_class("s3").clear_instance_cache()
    _fails(tmp_path, r"^s3://bucket/run: cannot reach the store \(",
           output={"path": "s3://bucket/run", "target": "chat"})  # fmt: skip
    assert not (tmp_path / "cache").exists()
    fsspec.get_filesystem_class("s3").clear_instance_cache()


def test_output_that_is_a_file(src: Path, tmp_path: Path) -> None:
    job = write_job(tmp_path / "job.toml", [{"path": "in.jsonl", "format": "responses"}],
                    {"path": "in.jsonl", "target": "chat"})  # fmt: skip
    with pytest.raises(ConfigError, match="is a file; give a directory"):
        load_job(job)


def test_bad_job_name(src: Path, tmp_path: Path) -> None:
    _fails(tmp_path, "name: String should match pattern", name="my job/1")


def test_unknown_step(src: Path, tmp_path: Path) -> None:
    _fails(tmp_path, r"steps\[1\]: .*unknown step 'no_such_step'; use one of .*role_swap",
           steps=["turns", "no_such_step"])  # fmt: skip


def test_unknown_step_parameter(src: Path, tmp_path: Path) -> None:
    _fails(tmp_path, r"steps\[0\]: step turns: unknown parameter 'max'", steps=[{"name": "turns", "max": 3}])


def test_bad_step_parameter_value(src: Path, tmp_path: Path) -> None:
    _fails(tmp_path, r"steps\[0\]: step role_swap: on_unsupported: Input should be 'reject' or 'drop'",
           steps=["role_swap:on_unsupported=keep"])  # fmt: skip


def test_step_table_without_name(src: Path, tmp_path: Path) -> None:
    _fails(tmp_path, r"steps\[0\] has no name", steps=[{"preview_chars": 3}])


def test_unknown_source_option(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "rollout.jsonl", [b"{}"])
    inputs = [{"path": "rollout.jsonl", "format": "codex-rollout", "options": {"bogus": 1}}]
    _fails(tmp_path, "bogus", inputs=inputs)


def test_ray_engine_without_ray(src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real = builtins.__import__

    def no_ray(name: str, *a: object, **k: object) -> object:
        if name == "ray" or name.startswith("ray."):
            raise ImportError("no ray")
        return real(name, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_ray)
    monkeypatch.setattr("importlib.import_module", lambda name, *a: no_ray(name))
    _fails(tmp_path, r"pip install 'chatlake\[ray\]'", engine={"kind": "ray"})


def test_steps_as_tables_and_strings_resolve_with_their_names(src: Path, tmp_path: Path) -> None:
    path = write_job(tmp_path / "job.toml", [{"path": "in.jsonl", "format": "responses"}], OK_OUTPUT,
                     steps=[{"name": "role_swap", "on_unsupported": "drop"}, {"name": "turns"}])  # fmt: skip
    job = load_job(path)
    assert job.step_names == ["role_swap", "turns"]
    assert job.step_specs == [{"name": "role_swap", "on_unsupported": "drop"}, {"name": "turns"}]
    path = write_job(tmp_path / "job2.toml", [{"path": "in.jsonl", "format": "responses"}], OK_OUTPUT,
                     steps=["window:last_turns=2"])  # fmt: skip
    assert load_job(path).step_names == ["window"]


def test_parse_job_overrides_win(src: Path, tmp_path: Path) -> None:
    text = (tmp_path / "job.toml")
    write_job(text, [{"path": "in.jsonl", "format": "responses"}], OK_OUTPUT)
    job = parse_job(text.read_text(), tmp_path, {"engine.workers": 1, "engine.kind": None})
    assert job.workers == 1 and job.engine == "local"


def test_fingerprint_ignores_workers_and_engine_but_not_the_shard_size(src: Path, tmp_path: Path) -> None:
    path = write_job(tmp_path / "job.toml", [{"path": "in.jsonl", "format": "responses"}], OK_OUTPUT)
    text = path.read_text()
    a = parse_job(text, tmp_path).fingerprint()
    assert parse_job(text, tmp_path, {"engine.workers": 7}).fingerprint() == a
    assert parse_job(text, tmp_path, {"engine.pool": "processes"}).fingerprint() == a
    assert parse_job(text, tmp_path, {"output.shard_records": 7}).fingerprint() != a


def test_a_job_file_that_is_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "job.toml").write_bytes(b'name = "caf\xe9"\n')
    with pytest.raises(ConfigError, match=r"is not UTF-8 text \(byte 0xe9 at offset 11\); save it as UTF-8"):
        load_job(tmp_path / "job.toml")


def test_a_set_table_is_checked_against_the_target(src: Path, tmp_path: Path) -> None:
    """[set] takes the target's own field names and typed values; anything else fails before work."""
    wrong = r"set: the chat target takes model and max_completion_tokens, not 'max_tokens' \(its token limit"
    _fails(tmp_path, wrong, set_fields={"max_tokens": 10})
    _fails(tmp_path, "set: max_completion_tokens must be a whole", set_fields={"max_completion_tokens": 0})
    _fails(tmp_path, "set: model must be a non-empty string", set_fields={"model": 5})
    parquet = {"path": "run", "target": "parquet"}
    _fails(tmp_path, "no request fields to set", output=parquet, set_fields={"model": "m"})
    _fails(tmp_path, r"set: model must be a number, true/false or a string, not \[1\]",
           set_fields={"model": [1]})
    args: dict[str, Any] = {"inputs": [{"path": "in.jsonl", "format": "responses"}], "output": OK_OUTPUT}
    plain = load_job(write_job(tmp_path / "plain.toml", **args))
    fields = {"model": "gpt-5", "max_completion_tokens": "100"}
    job = load_job(write_job(tmp_path / "job.toml", **args, set_fields=fields))
    assert job.sets == {"model": "gpt-5", "max_completion_tokens": 100} and plain.sets == {}
    assert job.fingerprint() != plain.fingerprint()  # a run directory resumes only its own values
