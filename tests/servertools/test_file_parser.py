"""The `file-parser` plugin end to end: a PDF (a real one, three pages) reaches a model that cannot read files as
its text, a model that reads files gets it unchanged, the page limit, fallback between the two, and the 400s."""

from __future__ import annotations

import base64

import pytest

from tests.fakes.pdfs import make_pdf
from tests.inference.conftest import add_endpoint, generations
from tests.servertools.conftest import KEY_ENV, MODEL, text

READER = "fakefile/reader"
PAGES = ("Quarterly revenue was 4.2 million.", "Costs fell by 8 percent.", "Outlook: steady growth.")


def pdf_part(*pages: str, name: str = "report.pdf") -> dict:
    data = base64.b64encode(make_pdf(*pages)).decode()
    return {"type": "input_file", "filename": name, "file_data": f"data:application/pdf;base64,{data}"}


def question(*parts: dict) -> list[dict]:
    return [{"role": "user", "content": [{"type": "input_text", "text": "Summarize the file."}, *parts]}]


@pytest.fixture
def reader(agent_catalog):
    """A model that reads files natively (catalog input_modalities [text, file]) on the same fake upstream."""
    from inference.models import Model

    base = {"base_url": agent_catalog.base_url, "api_key_env": KEY_ENV}
    add_endpoint(READER, "fakefile", api_format="openai-responses", upstream_model="up-reader", **base)
    add_endpoint("fakefile/flaky", "fakeflaky", api_format="openai-responses", upstream_model="fail-503", **base)
    Model.objects.filter(slug__startswith="fakefile/").update(input_modalities=["text", "file"])
    return agent_catalog


def post(agent, model, parts, plugin=None, **extra):
    body = {"model": model, "input": question(*parts), "plugins": [plugin or {"id": "file-parser"}], **extra}
    return agent.post("/responses", json=body, headers={"X-Service-Metadata": "enabled"})


def stage_of(response):
    return next(s for s in response.json()["service_metadata"]["pipeline"] if s.get("name") == "file-parser")


def test_pdf_becomes_text_for_a_model_that_cannot_read_files(agent, agent_catalog):
    agent_catalog.script = [text("Revenue 4.2M, costs down.")]
    response = post(agent, MODEL, [pdf_part(*PAGES)])
    assert response.status_code == 200, response.text
    [request] = agent_catalog.requests
    content = request.body["input"][0]["content"]
    assert [p["type"] for p in content] == ["input_text", "input_text"]
    sent = content[1]["text"]
    assert sent.startswith("Contents of the file report.pdf (PDF, 3 page(s), text extracted by the gateway):")
    assert "--- page 1 ---\nQuarterly revenue was 4.2 million." in sent and "--- page 3 ---\nOutlook" in sent
    stage = stage_of(response)
    assert stage["summary"] == "1 of 1 file(s) parsed to text"
    assert stage["data"]["files"] == [
        {"name": "report.pdf", "kind": "pdf", "parsed": True, "chars": stage["data"]["files"][0]["chars"],
         "pages": 3, "pages_parsed": 3, "truncated": False}
    ]  # fmt: skip
    assert stage["data"]["text_for"] == [MODEL] and stage["data"]["native_for"] == []
    [row] = generations(1)
    assert row.status == "completed" and any(s.get("name") == "file-parser" for s in row.pipeline)


def test_a_model_that_reads_files_gets_the_pdf_unchanged(agent, reader):
    part = pdf_part(*PAGES)
    response = post(agent, READER, [part])
    assert response.status_code == 200, response.text
    [request] = reader.requests
    assert request.body["input"][0]["content"][1] == part
    stage = stage_of(response)
    assert stage["summary"] == "1 file(s) sent as is" and stage["data"]["native_for"] == [READER]


def test_engine_pdf_text_parses_even_for_a_model_that_reads_files_and_page_limit(agent, reader):
    plugin = {"id": "file-parser", "pdf": {"engine": "pdf-text", "max_pages": 2}}
    response = post(agent, READER, [pdf_part(*PAGES)], plugin)
    assert response.status_code == 200, response.text
    sent = reader.requests[0].body["input"][0]["content"][1]["text"]
    assert "Costs fell" in sent and "Outlook" not in sent
    assert sent.endswith("[Only the first 2 of 3 pages were extracted: the file-parser page limit.]")
    assert stage_of(response)["data"]["files"][0]["truncated"] is True


def test_fallback_from_a_reader_to_a_text_model_sends_the_text(agent, reader):
    """Per candidate: the first model reads files (and fails upstream), the fallback cannot: it gets the text."""
    part = pdf_part(*PAGES)
    response = post(agent, "fakefile/flaky", [part], models=[MODEL])
    assert response.status_code == 200, response.text
    first, second = reader.requests
    assert first.model == "fail-503" and first.body["input"][0]["content"][1] == part
    assert second.body["input"][0]["content"][1]["text"].startswith("Contents of the file report.pdf")


def test_text_file_and_native_engine_skips_models_that_cannot_read(agent, reader):
    note = base64.b64encode(b"Meeting moved to Friday.").decode()
    part = {"type": "input_file", "filename": "note.txt", "file_data": f"data:text/plain;base64,{note}"}
    response = post(agent, MODEL, [part])
    assert response.status_code == 200, response.text
    sent = reader.requests[0].body["input"][0]["content"][1]["text"]
    assert sent == "Contents of the file note.txt (text):\n\nMeeting moved to Friday."
    # engine native: the text-only model is skipped, the reader gets the file as it is
    response = post(agent, MODEL, [part], {"id": "file-parser", "pdf": {"engine": "native"}}, models=[READER])
    assert response.status_code == 200, response.text
    assert reader.requests[-1].model == "up-reader" and reader.requests[-1].body["input"][0]["content"][1] == part
    assert [a["status"] for a in response.json()["service_metadata"]["attempts"]] == ["skipped_by_plugin", "success"]


@pytest.mark.parametrize(
    ("plugin", "parts", "field", "words"),
    [
        ({"pdf": {"engine": "mistral-ocr"}}, None, "plugins[0].pdf.engine", "'mistral-ocr' is not available"),
        ({"pdf": {"engine": "cloudflare-ai"}}, None, "plugins[0].pdf.engine", "'cloudflare-ai' is not available"),
        ({"pdf": {"engine": "ocr"}}, None, "plugins[0].pdf.engine", "must be one of pdf-text, native"),
        ({"pdf": {"max_pages": 0}}, None, "plugins[0].pdf.max_pages", "from 1 to 100"),
        ({"pdf": {"pages": 1}}, None, "plugins[0].pdf.pages", "unknown parameter"),
        ({"max_files": 1}, None, "plugins[0].max_files", "unknown parameter"),
        ({"pdf": {"engine": "native"}}, None, "plugins[0].pdf.engine", "needs a model that reads files"),
        ({}, [{"type": "input_file", "filename": "x.pdf", "file_data": "data:application/pdf;base64,JVBERi0xLjQK"}],
         "input[0].content[1]", "file 'x.pdf' cannot be parsed: it could not be read as a PDF"),
        ({}, [{"type": "input_file", "file_url": "https://example.com/a.pdf"}],
         "plugins[0]", "input[0].content[1]: file 'https://example.com/a.pdf' cannot be turned into text"),
    ],
)  # fmt: skip
def test_refusals_are_400_naming_the_field(agent, agent_catalog, plugin, parts, field, words):
    response = post(agent, MODEL, parts or [pdf_part("one")], {"id": "file-parser", **plugin})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["metadata"]["field"] == field and words in error["message"]
    assert agent_catalog.requests == []


def test_budget_holds_the_parsed_text_not_the_files_catalog_worst_case(agent, agent_catalog, org):
    """The catalog says a file costs at most 10 tokens on this endpoint; its text is 20 pages long. The hold is
    taken on the text the model is sent: a budget that covers the request as sent by the client but not the
    parsed text refuses it (402) before the model is called; a larger one is charged what was billed."""
    from inference.models import Endpoint
    from inference.plugins.files import classify, parse
    from inference.routing import candidate_from_endpoint
    from metering.estimate import worst_case_cost
    from tests.servertools.test_loop import counter, put_budget

    Endpoint.objects.filter(model__slug=MODEL).update(max_file_tokens=10)
    part = pdf_part(*[f"Page {n}: " + "figures and notes " * 5 for n in range(20)])
    body = {"model": MODEL, "input": question(part), "plugins": [{"id": "file-parser"}], "max_output_tokens": 10}
    endpoint = Endpoint.objects.select_related("model", "provider").get(model__slug=MODEL)
    cand = candidate_from_endpoint(endpoint)
    as_sent = worst_case_cost(body, [cand])
    parsed = {"type": "input_text", "text": parse(classify(part, "f"), 100).text}
    as_parsed = worst_case_cost({**body, "input": question(parsed)}, [cand])
    assert as_parsed > 2 * as_sent
    put_budget(org, "daily", float(as_sent * 2))
    response = agent.post("/responses", json=body)
    assert response.status_code == 402, response.text
    assert agent_catalog.requests == []
    put_budget(org, "daily", 1)
    agent_catalog.script = [text("Twenty pages of figures.")]
    response = agent.post("/responses", json=body)
    assert response.status_code == 200, response.text
    rows = generations(2)
    spent = counter(org)
    assert spent.spent_usd == rows[-1].cost > 0 and spent.reserved_units == 0


def test_streamed_answer_about_a_parsed_pdf(agent, agent_catalog):
    agent_catalog.script = [text("Revenue ", "was 4.2M.")]
    response = post(agent, MODEL, [pdf_part(*PAGES)], stream=True)
    assert response.status_code == 200 and "Revenue " in response.text and "response.completed" in response.text
    sent = agent_catalog.requests[0].body["input"][0]["content"][1]["text"]
    assert "Quarterly revenue was 4.2 million." in sent and agent_catalog.requests[0].stream


def test_a_pdf_document_block_on_messages_reaches_a_text_model_as_text(agent_catalog, gateway_server, org):
    """Through /messages (the anthropic SDK): a base64 PDF document block for a model that cannot read files."""
    from anthropic import Anthropic

    client = Anthropic(base_url=f"{gateway_server.url}/api", api_key=org.inference_key, max_retries=0)
    agent_catalog.script = [text("Revenue was 4.2 million.")]
    data = base64.b64encode(make_pdf(*PAGES)).decode()
    document = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": data}}
    message = client.messages.create(
        model=MODEL,
        max_tokens=100,
        messages=[{"role": "user", "content": [document, {"type": "text", "text": "Summarize."}]}],
        extra_body={"plugins": [{"id": "file-parser"}]},
    )
    assert message.content[0].text == "Revenue was 4.2 million."
    sent = agent_catalog.requests[0].body["input"][0]["content"][0]
    assert sent["type"] == "input_text" and "--- page 2 ---\nCosts fell by 8 percent." in sent["text"]
    [row] = generations(1)
    assert row.ingress_format == "messages" and any(s.get("name") == "file-parser" for s in row.pipeline)
