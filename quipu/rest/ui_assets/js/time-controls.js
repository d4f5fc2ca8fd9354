// Moving through time: a slider over valid time (quipu's valid_at) and a picker of transactions
// (as_of_tx). The slider spans ROOT's history as GET /stats reports it, up to now; its right end is
// "now", the current state. The two combine: "as the store knew it after transaction 40, what
// was true on 3 November".

import { get } from "./api.js";
import { el } from "./terms.js";

const STEPS = 10000;
const DEBOUNCE_MS = 120;
const LISTED_TRANSACTIONS = 500;

export class TimeControls {
  constructor({ onChange }) {
    this.onChange = onChange;
    this.slider = document.getElementById("time-slider");
    this.label = document.getElementById("time-label");
    this.now = document.getElementById("time-now");
    this.picker = document.getElementById("tx-picker");
    this.slider.max = String(STEPS);
    this.slider.value = String(STEPS);
    this.lo = Date.now() - 86400000;
    this.hi = Date.now();
    this.validAt = null;
    this.tx = null;
    this.timer = null;
    this.slider.addEventListener("input", () => {
      this.validAt = this.instantOf(Number(this.slider.value));
      this.showLabel();
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.onChange(), DEBOUNCE_MS);
    });
    this.now.addEventListener("click", () => this.setValidAt(null));
    this.picker.addEventListener("change", () => {
      this.tx = this.picker.value === "" ? null : Number(this.picker.value);
      this.onChange();
    });
  }

  // span: GET /stats' valid_time; the slider runs from its earliest instant to now.
  setSpan(validTime) {
    const earliest = validTime.earliest ? Date.parse(validTime.earliest) : NaN;
    const latest = validTime.latest ? Date.parse(validTime.latest) : NaN;
    this.hi = Math.max(Date.now(), Number.isNaN(latest) ? 0 : latest);
    this.lo = Number.isNaN(earliest) ? this.hi - 86400000 : Math.min(earliest, this.hi - 60000);
    if (this.validAt !== null) this.slider.value = String(this.stepOf(Date.parse(this.validAt)));
    this.showLabel();
  }

  async loadTransactions(head) {
    const since = Math.max(0, head - LISTED_TRANSACTIONS);
    const log = await get("/transactions", { params: { since, limit: LISTED_TRANSACTIONS } });
    const options = [el("option", "latest transaction")];
    options[0].value = "";
    for (const t of [...log.transactions].reverse()) {
      const who = [t.actor, t.source].filter(Boolean).join(" · ");
      const option = el("option", `#${t.id} · ${t.timestamp}${who ? ` · ${who}` : ""}`);
      option.value = String(t.id);
      options.push(option);
    }
    this.picker.replaceChildren(...options);
    this.picker.value = this.tx === null ? "" : String(this.tx);
  }

  // Put the slider at an instant (null: now) and reload.
  setValidAt(instant) {
    this.validAt = instant === null ? null : this.instantOf(this.stepOf(Date.parse(instant)), instant);
    this.slider.value = String(instant === null ? STEPS : this.stepOf(Date.parse(instant)));
    this.showLabel();
    clearTimeout(this.timer);
    return this.onChange();
  }

  setTx(tx) {
    this.tx = tx;
    this.picker.value = tx === null ? "" : String(tx);
    return this.onChange();
  }

  view() {
    return { valid_at: this.validAt, tx: this.tx };
  }

  stepOf(t) {
    return Math.round(Math.min(1, Math.max(0, (t - this.lo) / (this.hi - this.lo))) * STEPS);
  }

  // The instant of a slider step; the last step is now (null). An exact instant a caller asked
  // for is kept rather than rounded to the step.
  instantOf(step, exact) {
    if (step >= STEPS) return null;
    if (exact) return exact;
    const t = this.lo + (step / STEPS) * (this.hi - this.lo);
    return new Date(Math.floor(t / 1000) * 1000).toISOString().replace(".000Z", "Z");
  }

  showLabel() {
    this.label.textContent = this.validAt === null ? "now" : this.validAt.replace("T", " ").replace("Z", " UTC");
  }
}
