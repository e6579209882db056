// The demo page: counts the text area live with the package's browser entry.
import { countTokens, estimateTokens } from "context-keeper";

const $ = (id) => document.getElementById(id);
const text = $("text");
const model = $("model");
const status = $("status");

function update() {
  const value = text.value;
  const started = performance.now();
  $("o200k").textContent = countTokens(value, { encoding: "o200k_base" });
  $("cl100k").textContent = countTokens(value, { encoding: "cl100k_base" });
  $("estimate").textContent = `≈ ${estimateTokens(value)}`;
  $("chars").textContent = value.length;
  const name = model.value.trim();
  $("model-label").textContent = name ? `model ${name}` : "model";
  try {
    $("by-model").textContent = name ? countTokens(value, { model: name }) : "–";
    status.classList.remove("error");
    status.textContent = `counted in ${(performance.now() - started).toFixed(1)} ms`;
  } catch (err) {
    $("by-model").textContent = "–";
    status.classList.add("error");
    status.textContent = `${err.name}: ${err.message}`;
  }
}

text.addEventListener("input", update);
model.addEventListener("input", update);
update();
document.body.dataset.ready = "true";
