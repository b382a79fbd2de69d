"""The web page in a real browser: headless Chromium from the operating system's packages
(``apt-get install chromium chromium-driver``), driven by Selenium. It loads the page, submits a
sentence, and checks that both models' translations and an attention picture appear, that
hovering a cell reads its weight, and that the fixed-context RNN explains why it has no picture.
Skipped, with the reason, where Chromium, its driver or Selenium is missing."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import threading
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts Chromium and its driver: processes

pytest.importorskip("fastapi", reason='the web app\'s extra is not installed: pip install -e ".[demo]"')
pytest.importorskip("selenium", reason="selenium is not installed (it is in the dev extra)")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
if not (CHROMIUM and CHROMEDRIVER):
    pytest.skip("no Chromium here: apt-get install chromium chromium-driver", allow_module_level=True)

import uvicorn  # noqa: E402
from helpers.checkpoints import SRC, build_checkpoint  # noqa: E402
from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

from minitrans.analysis.alignment import gold_split  # noqa: E402
from minitrans.core.config import DataConfig  # noqa: E402
from minitrans.serve.app import ServedModel, create_app  # noqa: E402

# the Transformer "trained" on a small generated corpus, so that the page offers its test sentences
GENERATED = DataConfig(
    name="generated", src_lang="de", tgt_lang="en", num_valid=4, num_test=6, min_words=4, max_words=8
)

HEADLESS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,1000",
]


def patient(browser) -> WebDriverWait:
    """A wait that looks again when the page re-renders the element it was reading.

    Each translation replaces the results' elements; an element found just before that and
    read just after is stale, which only means "look again".
    """
    return WebDriverWait(browser, 60, ignored_exceptions=(StaleElementReferenceException,))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app over a tiny Transformer and a tiny fixed-context RNN, served on a free local port."""
    root = tmp_path_factory.mktemp("browser")
    models = []
    for kind in ("transformer", "rnn"):
        data = GENERATED if kind == "transformer" else None
        build_checkpoint(root / kind / "checkpoints" / "best.pt", kind, max_len=96, data=data)
        models.append(ServedModel.load(root / kind, "cpu"))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(models), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        WebDriverWait(None, 30, poll_frequency=0.05).until(lambda _: server.started)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in HEADLESS:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def api_translations(url: str, sentence: str) -> list[str]:
    request = urllib.request.Request(
        url + "/translate", json.dumps({"sentences": [sentence]}).encode(), {"content-type": "application/json"}
    )
    reply = json.load(urllib.request.urlopen(request, timeout=30))
    return [model["translations"][0]["text"] for model in reply["models"]]


def test_the_page_translates_a_sentence_and_draws_its_attention(server, browser):
    browser.get(server + "/")
    wait = patient(browser)
    wait.until(lambda b: "transformer" in b.find_element(By.ID, "models").text)
    browser.find_element(By.ID, "sentences").send_keys(SRC[0])
    browser.find_element(By.ID, "go").click()
    wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "svg.heatmap"))

    sections = browser.find_elements(By.CSS_SELECTOR, "section.model")
    assert [s.find_element(By.TAG_NAME, "h3").text.lower() for s in sections] == [
        "transformer · transformer",
        "rnn · rnn",
    ]
    shown = [s.find_element(By.CLASS_NAME, "translation").text for s in sections]
    assert shown == api_translations(server, SRC[0]) and all(shown)

    transformer, rnn = sections
    # cross-attention by default: 2 decoder layers x 2 heads as small multiples, tokens on the axes
    maps = transformer.find_elements(By.CSS_SELECTOR, "svg.heatmap")
    assert len(maps) == 4
    labels = [t.text for t in maps[0].find_elements(By.TAG_NAME, "text")]
    assert "</s>" in labels and any(label.startswith("▁") for label in labels)
    assert "one vector C" in rnn.text and not rnn.find_elements(By.CSS_SELECTOR, "svg.heatmap")

    cell = maps[0].find_elements(By.TAG_NAME, "rect")[0]
    ActionChains(browser).move_to_element(cell).perform()
    tip = browser.find_element(By.ID, "tip")
    wait.until(lambda b: tip.is_displayed())
    assert re.fullmatch(r".+ → .+: [01]\.\d{3}", tip.text)

    Select(transformer.find_element(By.CSS_SELECTOR, "select.kind")).select_by_value("enc_self")
    Select(transformer.find_element(By.CSS_SELECTOR, "select.head")).select_by_value("1")
    wait.until(lambda b: len(transformer.find_elements(By.CSS_SELECTOR, "svg.heatmap")) == 1)  # 1 layer, head 2
    assert "rows: source pieces, columns: source pieces" in transformer.text


def test_the_page_shows_a_bad_request_as_one_line(server, browser):
    browser.get(server + "/")
    wait = patient(browser)
    wait.until(lambda b: "transformer" in b.find_element(By.ID, "models").text)
    browser.find_element(By.ID, "sentences").send_keys("x" * 1001)
    browser.find_element(By.ID, "go").click()
    status = browser.find_element(By.ID, "status")
    wait.until(lambda b: "error" in status.get_attribute("class"))
    assert status.text == "error: sentence 1 has 1001 characters; at most 1000 (--max-chars)"


def test_the_page_says_the_language_direction_and_hints_to_scroll_a_wide_grid(server, browser):
    browser.get(server + "/")
    wait = patient(browser)
    wait.until(lambda b: "transformer" in b.find_element(By.ID, "models").text)
    assert browser.find_element(By.ID, "direction").text == "German → English"
    long = " ".join([SRC[0], SRC[1], SRC[2]] * 3)  # 36 words: more source pieces than the width holds
    browser.find_element(By.ID, "sentences").send_keys(long)
    browser.find_element(By.ID, "go").click()
    wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "svg.heatmap"))
    transformer = browser.find_elements(By.CSS_SELECTOR, "section.model")[0]
    hint = transformer.find_element(By.CLASS_NAME, "scroll-hint")
    wait.until(lambda b: hint.is_displayed())
    assert re.fullmatch(r"wider than the page: scroll sideways to see all \d+ columns →", hint.text)
    maps = transformer.find_element(By.CLASS_NAME, "maps")
    assert browser.execute_script("return arguments[0].scrollWidth > arguments[0].clientWidth", maps)
    assert "warning: transformer: sentence 1:" in browser.find_element(By.ID, "results").text  # cut to max_len
    if os.environ.get("MINITRANS_SCREENSHOTS"):  # a folder to look at the page in
        browser.save_screenshot(str(Path(os.environ["MINITRANS_SCREENSHOTS"]) / "wide-grid.png"))

    browser.find_element(By.ID, "sentences").clear()
    browser.find_element(By.ID, "sentences").send_keys(SRC[0])
    browser.find_element(By.ID, "go").click()
    wait.until(lambda b: b.find_element(By.CSS_SELECTOR, "article.sentence h2").text == SRC[0])
    wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "svg.heatmap"))  # drawn, and the hint decided
    hint = browser.find_elements(By.CSS_SELECTOR, "section.model")[0].find_element(By.CLASS_NAME, "scroll-hint")
    assert not hint.is_displayed()  # a short sentence fits: no hint


def test_a_picked_test_sentence_shows_each_heads_aer_and_where_its_gold_links_are(server, browser):
    browser.get(server + "/")
    wait = patient(browser)
    wait.until(lambda b: b.find_element(By.ID, "picker").is_displayed())
    sources = [source for source, _, _ in gold_split(GENERATED, "test")]
    options = browser.find_elements(By.CSS_SELECTOR, "#examples option")
    assert [o.get_attribute("value") for o in options[1:]] == sources
    Select(browser.find_element(By.ID, "examples")).select_by_value(sources[0])
    wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "article.sentence h2"))
    assert browser.find_element(By.CSS_SELECTOR, "article.sentence h2").text == sources[0]
    wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "svg.heatmap"))
    transformer, rnn = browser.find_elements(By.CSS_SELECTOR, "section.model")
    captions = [c.text for c in transformer.find_elements(By.TAG_NAME, "figcaption")]
    assert len(captions) == 4 and all(
        re.fullmatch(r"layer \d · head \d · AER [01]\.\d{3}( · alignment)?", c) for c in captions
    )
    note = transformer.find_element(By.CLASS_NAME, "gold-note").text
    assert "alignment error rate" in note
    outlines = transformer.find_elements(By.CSS_SELECTOR, "svg.heatmap g.gold rect")
    if "are outlined" in note:  # the translation is the reference: its gold links are drawn
        assert outlines
    else:
        assert "differs from the reference" in note and not outlines
    assert not rnn.find_elements(By.CLASS_NAME, "gold-note")  # the fixed-context RNN: no attention
    Select(transformer.find_element(By.CSS_SELECTOR, "select.kind")).select_by_value("enc_self")
    wait.until(lambda b: "AER" not in transformer.find_element(By.CLASS_NAME, "maps").text)  # AER: cross only
    if os.environ.get("MINITRANS_SCREENSHOTS"):
        browser.save_screenshot(str(Path(os.environ["MINITRANS_SCREENSHOTS"]) / "gold-picked.png"))


def test_japanese_is_drawn_with_the_served_cjk_font_and_arabic_right_to_left(server, browser):
    browser.get(server + "/")
    wait = patient(browser)
    wait.until(lambda b: "transformer" in b.find_element(By.ID, "models").text)
    browser.find_element(By.ID, "sentences").send_keys("私は猫が好きです。\nهذا كتاب.")
    browser.find_element(By.ID, "go").click()
    wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "article.sentence")) == 2)
    headings = browser.find_elements(By.CSS_SELECTOR, "article.sentence > h2 > span[dir=auto]")
    assert [h.text for h in headings] == ["私は猫が好きです。", "هذا كتاب."]
    direction = "return getComputedStyle(arguments[0]).direction"
    assert [browser.execute_script(direction, h) for h in headings] == ["ltr", "rtl"]  # the full stop ends the line
    statuses = browser.execute_async_script(
        "const done = arguments[0]; document.fonts.ready.then(() => "
        "done([...document.fonts].filter(f => f.family.includes('minitrans CJK')).map(f => f.status)))"
    )
    assert statuses == ["loaded"]  # fetched from /font/cjk because the page shows kana and kanji
    if os.environ.get("MINITRANS_SCREENSHOTS"):
        browser.save_screenshot(str(Path(os.environ["MINITRANS_SCREENSHOTS"]) / "cjk-arabic.png"))
