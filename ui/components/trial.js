// One trial of a study, drawn in the participant's browser (issue 56): the item's text and question (as text, never
// HTML), its control (a slider that shows no value until it is moved, or one radio button per option) and Next.
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
  const group = element("div", "plab-choices");
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
  if (data.text) trial.append(element("p", "plab-text", data.text));
  if (data.question) trial.append(element("p", "plab-question", data.question));
  const next = element("button", "plab-next", "Next");
  next.type = "button";
  const ready = (value, moved) => {
    t.value = value;
    t.moved = t.moved || moved;
    next.disabled = value === null;
  };
  trial.append(data.control === "slider" ? slider(data, ready) : choices(data, ready));
  next.addEventListener("click", () => {
    if (next.disabled || window[STATE] !== t) return;
    next.disabled = true; // one answer per trial: a second click sends nothing
    back();
    const now = performance.now();
    window[STATE] = null;
    setTriggerValue("answer", {
      position: data.position,
      value: t.value,
      moved: t.moved,
      rt_ms: now - t.shown,
      left_count: t.left,
      left_ms: t.leftMs,
    });
  });
  trial.append(next);
  parentElement.append(trial);
}
