#!/usr/bin/python3
"""The chat page at / in headless Chromium (Debian's chromium + chromium-driver, driven by
Debian's python3-selenium), against a server started with --api-key: the page loads without the
key, says it needs one, and lists both served models (the model and a tiny fixture beside it) once
the key is entered; it sends a message and shows the
answer as it streams, with time to first token and tokens/s; the streamed text is the server's own
greedy answer for the chosen model; Stop aborts a long generation and the server frees the slot
(read back from /metrics); a request the server refuses shows the server's error message; the
JSON switch gives the server's json_object answer; a wrong key shows the 401. A screenshot is kept
in <build>/test-outputs/.

Usage: chat_page_browser_test.py SPORE_BINARY MODEL OUTPUT_DIR. Exit 77 (ctest: skipped) with the
reason when Chromium, its driver, Selenium or the model is absent.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request

SKIP = 77
KEY = "chat-page-test-key"


def skip(why):
    print("SKIPPED: " + why)
    sys.exit(SKIP)


def main():
    spore, model, out_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    driver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    if not os.path.exists(chromium) or not os.path.exists(driver):
        skip("no Chromium or chromedriver (Debian: apt-get install chromium chromium-driver; scripts/install-deps.sh)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait
    except ImportError:
        skip("no Selenium for /usr/bin/python3 (Debian: apt-get install python3-selenium)")
    if not os.path.exists(model) or not any(f.endswith(".gguf") for f in os.listdir(model)):
        skip(model + " is not there (bash scripts/fetch-model.sh)")

    # The server on a free port; it prints the address it listens on. Without the prefix cache,
    # so the page's greedy answer and the JSON one below run the very same chunks (with it, the
    # second would reuse the first's rows and run other matrix shapes; a near tie could flip).
    # A second, tiny model beside it: the picker must list every served model (NOTE [Many models]).
    tiny = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "serve", "tiny-llama.gguf")
    server = subprocess.Popen([spore, "serve", "--model", model, "--model", tiny, "--port", "0", "--slots", "2", "--ctx", "1024",
                               "--threads", "2", "--no-prefix-cache", "--api-key", KEY], stderr=subprocess.PIPE, text=True)
    base = None
    try:
        for line in server.stderr:
            m = re.search(r"listening on (http://[0-9.]+:\d+)", line)
            if m:
                base = m.group(1)
                break
        if not base:
            raise AssertionError("spore serve did not say where it listens")
        # Keep reading stderr so the server never blocks on a full pipe.
        import threading
        threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(base + "/health") as r:
                    if r.status == 200:
                        break
            except Exception:
                pass
            if time.time() > deadline:
                raise AssertionError("spore serve did not become healthy in 60 s")
            time.sleep(0.1)
        run_browser(base, out_dir, webdriver, Service, By, WebDriverWait, chromium, driver)
    finally:
        server.terminate()
        server.wait(timeout=30)
    print("PASSED")


def api(base, path, body=None):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer " + KEY})
    with urllib.request.urlopen(req, timeout=120) as r:
        return r.read().decode()


def metric(base, name):
    m = re.search(r"\n" + re.escape(name) + r" ([0-9.e+-]+)\n", api(base, "/metrics"))
    return float(m.group(1)) if m else None


def run_browser(base, out_dir, webdriver, Service, By, WebDriverWait, chromium, driver_path):
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1000,800"):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service(driver_path), options=opts)
    os.makedirs(out_dir, exist_ok=True)
    shot = os.path.join(out_dir, "serve_chat_page_browser.png")
    try:
        driver.get(base + "/")
        wait = WebDriverWait(driver, 120, poll_frequency=0.05)
        state = lambda d: d.find_element(By.ID, "figures").get_attribute("data-state")
        models = lambda d: d.find_element(By.ID, "model").get_attribute("data-state")

        # 0. The page loads without the key and asks for it; with the key the picker lists the
        #    server's models.
        wait.until(lambda d: models(d) == "needs_key")
        assert "API key" in driver.find_element(By.ID, "figures").text
        enter_key(driver, KEY)
        wait.until(lambda d: models(d) == "loaded")
        listed = [o.get_attribute("value") for o in driver.find_elements(By.CSS_SELECTOR, "#model option")]
        served = [m["id"] for m in json.loads(api(base, "/v1/models"))["data"]]
        assert listed == served and len(listed) == 2 and "tiny-llama" in listed, (listed, served)
        print("models listed:", listed)

        # 1. A message, answered greedily: the page's streamed text is the server's JSON answer
        #    for the same conversation, and it arrived in several pieces.
        question = "What is the capital of France? Answer in one sentence."
        set_value(driver, "max_tokens", "24")
        set_value(driver, "temperature", "0")
        driver.execute_script(
            "window.pieces=[];new MutationObserver(()=>{const a=document.querySelectorAll('.assistant');"
            "if(a.length)window.pieces.push(a[a.length-1].textContent.length)})"
            ".observe(document.getElementById('log'),{childList:true,subtree:true,characterData:true});")
        answer, expected = ask_and_compare(driver, By, wait, state, base, question,
                                           {"model": listed[0], "max_tokens": 24, "temperature": 0})
        pieces = [n for n in driver.execute_script("return window.pieces") if n > 0]
        assert len(set(pieces)) >= 3, "the answer did not stream (lengths seen: %s)" % pieces
        figures = driver.find_element(By.ID, "figures").text
        assert re.search(r"first token \d+ ms", figures), figures
        assert re.search(r"\d+(\.\d)? tokens/s", figures), figures
        n = int(re.search(r"(\d+) tokens,", figures).group(1))
        assert n == expected["usage"]["completion_tokens"], (figures, expected["usage"])
        assert [e.text for e in driver.find_elements(By.CSS_SELECTOR, ".user")] == [question]
        print("answer:", answer.strip(), "|", figures)

        # A second turn: the conversation is rendered in order and the model answers in context.
        driver.find_element(By.ID, "input").send_keys("And of Italy?")
        driver.find_element(By.ID, "send").click()
        wait.until(lambda d: state(d) in ("done", "error"))
        assert state(driver) == "done", driver.find_element(By.ID, "log").text
        roles = [e.get_attribute("class") for e in driver.find_elements(By.CSS_SELECTOR, "#log .msg")]
        assert roles == ["msg user", "msg assistant", "msg user", "msg assistant"], roles
        print("second turn:", driver.find_elements(By.CSS_SELECTOR, ".assistant")[-1].text.strip(), "|",
              driver.find_element(By.ID, "figures").text)

        # 2. Stop on a long generation: the text stops growing, the page says so, the slot is free.
        driver.find_element(By.ID, "clear").click()
        generated_before = metric(base, "spore_generated_tokens_total")
        set_value(driver, "max_tokens", "600")
        set_value(driver, "temperature", "0.8")
        driver.find_element(By.ID, "input").send_keys("Write a very long story about a dragon who learns to cook.")
        driver.find_element(By.ID, "send").click()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".assistant")) == 1 and
                   len(d.find_elements(By.CSS_SELECTOR, ".assistant")[0].text) > 20)
        assert metric(base, "spore_active_slots") == 1
        driver.find_element(By.ID, "stop").click()
        wait.until(lambda d: state(d) == "stopped")
        stopped = driver.find_elements(By.CSS_SELECTOR, ".assistant")[0].text
        t0 = time.time()
        while metric(base, "spore_active_slots") != 0 and time.time() - t0 < 30:
            time.sleep(0.05)
        assert metric(base, "spore_active_slots") == 0, "the slot was not freed after Stop"
        freed_s = time.time() - t0
        time.sleep(0.5)
        assert driver.find_elements(By.CSS_SELECTOR, ".assistant")[0].text == stopped
        assert metric(base, "spore_generated_tokens_total") - generated_before < 600, "the stopped generation ran on"
        assert not driver.find_element(By.ID, "stop").is_enabled()
        print("stopped after %d characters; slot free %.2f s after the page said stopped" % (len(stopped), freed_s))

        # 3. A request the server refuses (temperature out of range): its error message is shown.
        set_value(driver, "temperature", "9")
        driver.find_element(By.ID, "input").send_keys("Hello?")
        driver.find_element(By.ID, "send").click()
        wait.until(lambda d: state(d) == "error")
        err = driver.find_elements(By.CSS_SELECTOR, ".error")[-1].text
        assert "temperature" in err and "(400)" in err, err
        print("error shown:", err)

        # 4. JSON mode: the page's answer is the server's json_object answer, a JSON object.
        driver.find_element(By.ID, "clear").click()
        set_value(driver, "temperature", "0")
        set_value(driver, "max_tokens", "48")
        driver.find_element(By.ID, "json_mode").click()
        question = "Describe a cat with its name and age."
        answer, expected = ask_and_compare(driver, By, wait, state, base, question,
                                           {"model": listed[0], "max_tokens": 48, "temperature": 0,
                                            "response_format": {"type": "json_object"}})
        assert answer.lstrip().startswith("{"), answer
        if expected["choices"][0]["finish_reason"] == "stop":
            assert isinstance(json.loads(answer), dict), answer
        print("JSON mode:", answer.strip(), "|", expected["choices"][0]["finish_reason"])

        # 5. A wrong key: the request's 401 is shown.
        enter_key(driver, "not-the-key")
        driver.find_element(By.ID, "input").send_keys("Hello?")
        driver.find_element(By.ID, "send").click()
        wait.until(lambda d: state(d) == "error")
        err = driver.find_elements(By.CSS_SELECTOR, ".error")[-1].text
        assert "API key" in err and "(401)" in err, err
        print("wrong key shown:", err)
        driver.save_screenshot(shot)
        print("screenshot:", shot)
    except BaseException:
        driver.save_screenshot(shot)
        print("screenshot of the failure:", shot)
        raise
    finally:
        driver.quit()


def ask_and_compare(driver, By, wait, state, base, question, settings):
    """Sends `question` from the page and waits for the answer; asserts it is the server's own
    (non-streamed) answer to the same one-message conversation with `settings`. Returns the page's
    answer and the server's JSON."""
    driver.find_element(By.ID, "input").send_keys(question)
    driver.find_element(By.ID, "send").click()
    wait.until(lambda d: state(d) in ("done", "error"))
    assert state(driver) == "done", driver.find_element(By.ID, "log").text
    answer = driver.find_elements(By.CSS_SELECTOR, ".assistant")[-1].text
    expected = json.loads(api(base, "/v1/chat/completions",
                              dict(settings, messages=[{"role": "user", "content": question}])))
    want = expected["choices"][0]["message"]["content"]
    assert answer.strip() == want.strip(), (answer, want)
    return answer, expected


def enter_key(driver, key):
    """Types the key as a user would; the page acts on the field's change event."""
    field = driver.find_element("id", "api_key")
    field.clear()
    field.send_keys(key)
    driver.execute_script("document.getElementById('api_key').dispatchEvent(new Event('change'))")


def set_value(driver, element_id, value):
    driver.execute_script("document.getElementById(arguments[0]).value=arguments[1]", element_id, value)


if __name__ == "__main__":
    main()
