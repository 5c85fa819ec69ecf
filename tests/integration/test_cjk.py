"""Chinese, Japanese and Korean text is split into character bigrams, so a question in Chinese
retrieves a Chinese document (issue 12 §6); Latin text is tokenized as before."""

from __future__ import annotations

import pytest

from rag.ingest.pipeline import ingest_files
from rag.store.retrieval import retrieve
from rag.text import terms

RETRIEVER_ZH = """检索器的工作原理

检索器从向量数据库和关键词索引中找到与问题相关的段落。它先把问题切分成词语，然后用BM25给每个段落打分，
再用稠密向量计算语义相似度，最后用倒数排序融合合并两个排名。相关段落随后交给生成器回答问题。"""

WEATHER_ZH = """今天的天气预报

北京今天晴转多云，最高气温二十五度，最低气温十四度。明天有小雨，出门请带伞。周末气温回升，适合郊游。"""

GARDEN_EN = "The widow's garden lies behind the kitchen; the trees shade the path towards it."


def test_terms_split_chinese_into_several_terms() -> None:
    got = terms("检索器从哪里找到相关段落？")
    assert len(got) >= 5
    assert {"检索", "相关", "段落"} <= set(got)


def test_japanese_and_korean_are_split_too() -> None:
    assert {"検索", "文書"} <= set(terms("検索エンジンで文書を探す"))
    assert {"검색", "문서"} <= set(terms("검색기가 문서를 찾는다"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The retriever's 10 passages aren't found", ["retriev", "10", "passag", "arent", "found"]),
        ("Retrieval-Augmented Generation (RAG)", ["retriev", "augment", "generat", "rag"]),
        ("café naïve Zürich", ["café", "naïv", "zürich"]),
    ],
)
def test_latin_terms_are_unchanged(text: str, expected: list[str]) -> None:
    assert terms(text) == expected


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_a_chinese_question_retrieves_the_chinese_document(kb, mode: str) -> None:
    reports = ingest_files(kb, [("检索器.md", RETRIEVER_ZH.encode()), ("天气.txt", WEATHER_ZH.encode()),
                                ("garden.txt", GARDEN_EN.encode())])
    assert all(r.status == "ingested" for r in reports), [r.line() for r in reports]
    found = retrieve(kb, "检索器从哪里找到相关段落？", 3, mode=mode)
    assert found and found[0].source == "检索器.md"
    found = retrieve(kb, "明天的天气怎么样？会下雨吗？", 3, mode=mode)
    assert found and found[0].source == "天气.txt"
