// One trial of a study, drawn in the participant's browser (issue 56): the item's text and question (as text, never
// HTML), its control (a slider that shows no value until it is moved, one radio button per option or per sentence of
// a forced choice, a self-paced reading window, or the Maze's pairs; issue 63) and Next.
// It times the trial with the browser's clock (performance.now) from the item's display to Next, and counts the
// times the participant left the tab (window blur, document hidden) and how long they were away. Next sends
// {position, value, moved, rt_ms, left_count, left_ms} as the `answer` trigger. A trial is one `data.key`: a rerun
// of the same trial keeps its clock; a new key (a new position) starts afresh with nothing carried over.
const STATE = "__plabTrial";

function away() {
  const t = window[STATE];
  if (t && t.awayAt === null) {
    t.awayAt = performance.now();
    t.left += 1;
  }
}

function back() {
  const t = window[STATE];
  if (t && t.awayAt !== null) {
    t.leftMs += performance.now() - t.awayAt;
    t.awayAt = null;
  }
}

function listen() {
  if (window.__plabTrialListening) return;
  window.__plabTrialListening = true;
  window.addEventListener("blur", away);
  window.addEventListener("focus", back);
  document.addEventListener("visibilitychange", () => (document.visibilityState === "hidden" ? away() : back()));
}

function element(tag, className, text) {
  const made = document.createElement(tag);
  if (className) made.className = className;
  if (text) made.textContent = text; // item texts are text: markup in them is shown, never run
  return made;
}

function slider(data, ready) {
  const box = element("div", data.require_movement ? "plab-slider untouched" : "plab-slider");
  const input = element("input");
  Object.assign(input, { type: "range", min: data.min, max: data.max, step: data.step });
  input.value = (data.min + data.max) / 2;
  input.setAttribute("aria-label", "Your answer");
  const ends = element("div", "plab-ends");
  ends.append(element("span", "", data.left ? `← ${data.left}` : ""), element("span", "", data.right ? `${data.right} →` : ""));
  box.append(input, ends);
  const moved = () => {
    box.classList.remove("untouched");
    ready(Number(input.value), true);
  };
  input.addEventListener("input", moved);
  input.addEventListener("change", moved);
  input.addEventListener("click", moved); // a click on the thumb's hidden place moves nothing, yet it is a choice
  ready(data.require_movement ? null : Number(input.value), false);
  return box;
}

function choices(data, ready) {
  const group = element("div", data.sentences ? "plab-choices plab-sentences" : "plab-choices");
  group.setAttribute("role", "radiogroup");
  group.setAttribute("aria-label", data.question || "Your answer");
  data.options.forEach(([label, value], n) => {
    const option = element("label", "plab-choice");
    const input = element("input");
    Object.assign(input, { type: "radio", name: `plab-${data.key}`, value: String(n) });
    input.addEventListener("change", () => ready(value, true));
    option.append(input, element("span", "", label));
    group.append(option);
  });
  ready(null, false);
  return group;
}

// Self-paced reading (issue 63, item 6): a moving window over the regions, each shown as dashes (spaces kept) until
// it is read; the space bar shows the next region and hides the one before. A region's time runs from the press that
// showed it to the press that leaves it, each taken from the key event's own timeStamp (the browser's clock when the
// key came in, the clock of performance.now), so a page busy drawing when a key comes does not move the time (it
// did, by up to 150 ms, when read in the handler). After the last region, the comprehension question (if any) and
// Next; without one, the last press sends the answer.
function mask(text) {
  return text.replace(/\S/g, "-");
}

function reading(data, t, send) {
  const box = element("div", "plab-reading");
  box.tabIndex = 0;
  const words = data.regions.map((region) => element("span", "plab-region", mask(region)));
  words.forEach((word) => box.append(word, document.createTextNode(" ")));
  const hint = element("p", "plab-hint", "Press the space bar to show the first part, then each next part.");
  const times = [];
  let at = -1;
  let since = 0;
  const question = element("div", "plab-comprehension");
  const press = (event) => {
    if (event.code !== "Space" || window[STATE] !== t || at >= data.regions.length) return;
    event.preventDefault();
    const now = event.timeStamp;
    if (at >= 0) {
      times.push(now - since);
      words[at].textContent = mask(data.regions[at]);
    }
    at += 1;
    since = now;
    if (at < data.regions.length) {
      words[at].textContent = data.regions[at];
      hint.textContent = "";
      return;
    }
    document.removeEventListener("keydown", press);
    t.regions = times;
    if (!data.question) {
      send(null);
      return;
    }
    box.hidden = true;
    question.hidden = false;
  };
  document.addEventListener("keydown", press);
  question.hidden = true;
  return { parts: [hint, box, question], question };
}

// The Maze (issue 63, item 6): each region beside its foil, the word on a side drawn at random (recorded); e
// chooses the left, i the right (or a click). A right choice shows the next pair; a wrong one ends the sentence
// (shown as such), and Next sends what was reached. Times run from a pair's display to its choice (the key or click
// event's timeStamp; the next pair's display is that moment).
function maze(data, t, send) {
  const box = element("div", "plab-maze");
  const left = element("button", "plab-maze-word");
  const right = element("button", "plab-maze-word");
  left.type = right.type = "button";
  const sentence = element("p", "plab-maze-sentence");
  const said = element("p", "plab-hint", "Choose the word that continues the sentence: e for the left, i for the right.");
  box.append(left, right);
  const times = [];
  const chosen = [];
  const sides = [];
  let at = 0;
  let since = 0;
  const show = () => {
    const side = Math.random() < 0.5 ? "left" : "right";
    sides.push(side);
    const [a, b] = side === "left" ? [data.regions[at], data.foils[at]] : [data.foils[at], data.regions[at]];
    left.textContent = a;
    right.textContent = b;
  };
  const choose = (side, when) => {
    if (window[STATE] !== t || at >= data.regions.length || chosen.length > at) return;
    times.push(when - since);
    since = when;
    const right_ = side === sides[at];
    chosen.push(right_);
    if (right_) sentence.textContent = data.regions.slice(0, at + 1).join(" ");
    at += 1;
    if (right_ && at < data.regions.length) {
      show();
      return;
    }
    document.removeEventListener("keydown", key);
    box.hidden = true;
    t.regions = times;
    t.choices = chosen;
    t.sides = sides;
    if (right_) {
      send(null);
      return;
    }
    said.textContent = "Incorrect: that word does not continue the sentence. Press Next for the next one.";
    t.wrong();
  };
  const key = (event) => {
    if (event.key === "e" || event.key === "i") {
      event.preventDefault();
      choose(event.key === "e" ? "left" : "right", event.timeStamp);
    }
  };
  left.addEventListener("click", (event) => choose("left", event.timeStamp));
  right.addEventListener("click", (event) => choose("right", event.timeStamp));
  document.addEventListener("keydown", key);
  since = performance.now(); // the first pair's display
  show();
  return { parts: [said, sentence, box] };
}

export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  listen();
  const root = parentElement.querySelector(".plab-trial");
  if (root && root.dataset.key === data.key && window[STATE]?.key === data.key) return; // the same trial, redrawn
  if (root) root.remove();
  const t = { key: data.key, shown: performance.now(), left: 0, leftMs: 0, awayAt: null, value: null, moved: false };
  window[STATE] = t;
  if (document.visibilityState === "hidden") away(); // drawn in a tab the participant is not looking at
  const trial = element("div", "plab-trial");
  trial.dataset.key = data.key;
  if (data.text && data.control !== "reading" && data.control !== "maze") trial.append(element("p", "plab-text", data.text));
  if (data.question) trial.append(element("p", "plab-question", data.question));
  const next = element("button", "plab-next", "Next");
  next.type = "button";
  const ready = (value, moved) => {
    t.value = value;
    t.moved = t.moved || moved;
    next.disabled = value === null;
  };
  const send = () => {
    if (window[STATE] !== t) return;
    next.disabled = true; // one answer per trial: a second click sends nothing
    back();
    const now = performance.now();
    window[STATE] = null;
    const regions = t.regions ? { regions: t.regions } : {};
    const maze_ = t.choices ? { choices: t.choices, sides: t.sides } : {};
    setTriggerValue("answer", {
      position: data.position,
      value: t.value,
      moved: t.moved,
      rt_ms: now - t.shown,
      left_count: t.left,
      left_ms: t.leftMs,
      ...regions,
      ...maze_,
    });
  };
  if (data.control === "reading") {
    const drawn = reading(data, t, send);
    trial.append(...drawn.parts);
    if (data.question) {
      drawn.question.append(element("p", "plab-question", data.question));
      const asked = { key: data.key, question: data.question, options: data.answers.map((a) => [a, a]) };
      drawn.question.append(choices(asked, ready));
      drawn.question.append(next);
    }
  } else if (data.control === "maze") {
    t.wrong = () => {
      next.disabled = false;
      trial.append(next);
    };
    trial.append(...maze(data, t, send).parts);
  } else {
    trial.append(data.control === "slider" ? slider(data, ready) : choices(data, ready));
    trial.append(next);
  }
  next.addEventListener("click", () => {
    if (!next.disabled) send();
  });
  parentElement.append(trial);
}
