"""Settings from the environment and a .env file (pydantic-settings): what wins, what is never written."""

from __future__ import annotations

import os

import pytest

from rag.config import Settings


def test_dotenv_is_read_the_environment_wins_and_nothing_is_written_back(tmp_path, monkeypatch):
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-from-dotenv\nRAG_GRADER_MODEL=from-dotenv\n"
                                   "RAG_LLM_TIMEOUT_S=7.5\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAG_ENV_FILE", raising=False)
    monkeypatch.setenv("RAG_GRADER_MODEL", "from-environment")
    monkeypatch.setenv("CHROMA_PORT", " 9001 ")
    before = dict(os.environ)
    settings = Settings.from_env()
    assert settings.openai_api_key == "sk-from-dotenv" and settings.llm_timeout_s == 7.5
    assert settings.grader_model == "from-environment" and settings.chroma_port == 9001
    assert dict(os.environ) == before  # the key never reaches os.environ
    assert "sk-from-dotenv" not in repr(settings)
    assert Settings.from_env(data_dir=tmp_path / "d").data_dir == tmp_path / "d"
    monkeypatch.setenv("RAG_ENV_FILE", "")  # none
    assert Settings.from_env().openai_api_key is None


def test_a_given_mapping_is_all_that_is_read(tmp_path, monkeypatch):
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-from-dotenv\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-environment")
    settings = Settings.from_env({"OPENAI_BASE_URL": "http://a", "RAG_EMBEDDING_MODEL": "  "},
                                 openai_base_url="http://b", tavily_api_base_url=None)
    assert settings.openai_api_key is None and settings.tavily_api_key is None
    assert settings.openai_base_url == "http://b"  # an override wins over its variable
    assert settings.embedding_model == "text-embedding-3-small"  # blank counts as unset
    assert settings.with_(openai_api_key="sk-typed").openai_api_key == "sk-typed"


@pytest.mark.parametrize(("env", "message"), [
    ({"CHROMA_PORT": "x"}, "CHROMA_PORT must be a number, got 'x'"),
    ({"RAG_MAX_UPLOAD_MB": "lots"}, "RAG_MAX_UPLOAD_MB must be a number, got 'lots'"),
    ({"RAG_RUN_DEADLINE_S": "0"}, "RAG_RUN_DEADLINE_S must be > 0, got '0'"),
])
def test_a_malformed_variable_is_one_line_naming_it(env, message):
    with pytest.raises(ValueError) as raised:
        Settings.from_env(env)
    assert str(raised.value) == message


def test_a_given_mapping_over_the_dotenv_file_when_asked(tmp_path, monkeypatch):
    (tmp_path / "app.env").write_text("OPENAI_API_KEY=sk-from-dotenv\nRAG_GRADER_MODEL=from-dotenv\n")
    monkeypatch.setenv("RAG_ENV_FILE", str(tmp_path / "app.env"))
    settings = Settings.from_env({"RAG_GRADER_MODEL": "from-mapping"}, dotenv=True)
    assert settings.openai_api_key == "sk-from-dotenv" and settings.grader_model == "from-mapping"
    assert Settings.from_env({"RAG_GRADER_MODEL": "from-mapping"}).openai_api_key is None
    monkeypatch.setenv("RAG_GRADER_MODEL", "from-environment")
    assert Settings.from_env(dotenv=False).grader_model == "from-environment"
    assert Settings.from_env(dotenv=False).openai_api_key is None
