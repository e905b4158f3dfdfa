// The course pages' only script: checklists kept in this browser's local storage, quizzes answered in place.
(function () {
  "use strict";
  var KEY = "physai-course:";
  function load(lesson) {
    try { return JSON.parse(localStorage.getItem(KEY + lesson) || "[]"); } catch (e) { return []; }
  }
  function save(lesson, steps) {
    try { localStorage.setItem(KEY + lesson, JSON.stringify(steps)); } catch (e) { /* storage off: still usable */ }
  }
  document.querySelectorAll(".checklist[data-lesson]").forEach(function (box) {
    var lesson = box.dataset.lesson, ticked = load(lesson), inputs = box.querySelectorAll("input[data-step]");
    var progress = box.querySelector(".progress");
    function show() {
      var done = Array.prototype.filter.call(inputs, function (i) { return i.checked; }).length;
      if (progress) progress.textContent = done + " of " + inputs.length + " done";
    }
    inputs.forEach(function (input) {
      input.checked = ticked.indexOf(input.dataset.step) >= 0;
      input.addEventListener("change", function () {
        save(lesson, Array.prototype.filter.call(inputs, function (i) { return i.checked; })
          .map(function (i) { return i.dataset.step; }));
        show();
      });
    });
    show();
  });
  document.querySelectorAll("[data-progress]").forEach(function (el) {
    el.textContent = load(el.dataset.progress).length + " of " + el.dataset.steps + " steps done";
  });
  document.querySelectorAll("[data-quiz]").forEach(function (quiz) {
    var verdict = quiz.querySelector(".verdict"), why = quiz.querySelector(".why");
    quiz.querySelectorAll("button[data-correct]").forEach(function (button) {
      button.addEventListener("click", function () {
        var right = button.dataset.correct === "true";
        button.classList.add(right ? "right" : "wrong");
        button.setAttribute("aria-pressed", "true");
        verdict.className = "verdict " + (right ? "right" : "wrong");
        // a wrong option's own why-not names the misconception behind it; the verdict shows it where it is given
        // once the right option is found, a wrong one clicked to read its why-not asks for no other answer
        var whyNot = button.parentNode.querySelector(".whynot"), answered = quiz.dataset.answered === "true";
        if (right) verdict.textContent = "Right.";
        else if (!whyNot) verdict.textContent = answered ? "Not quite." : "Not quite: try another answer.";
        else verdict.innerHTML = "Not quite. <span class=\"whynot-text\">" + whyNot.innerHTML + "</span>" +
          (answered ? "" : " Try another answer.");
        if (right) { why.hidden = false; quiz.dataset.answered = "true"; }
      });
    });
  });
  // A display equation a little wider than the column (a phone) is set smaller to fit; a much wider one keeps its
  // size and scrolls, with a shadow at the edge where it continues (the stylesheet's).
  var equations = document.querySelectorAll("math[display=block]");
  function fit() {
    equations.forEach(function (m) {
      m.style.fontSize = "";
      var scale = m.clientWidth / m.scrollWidth;
      if (scale < 1 && scale >= 0.7) m.style.fontSize = Math.floor(scale * 100) + "%";
    });
  }
  // A table wider than the column gets a line above it saying it scrolls; the line goes when the table fits.
  var tables = document.querySelectorAll(".table-wrap");
  function hint() {
    tables.forEach(function (wrap) {
      var line = wrap.previousElementSibling, scrolls = wrap.scrollWidth > wrap.clientWidth + 1;
      if (!(line && line.classList.contains("scroll-hint"))) {
        line = document.createElement("div");
        line.className = "scroll-hint";
        line.textContent = "Scroll the table sideways for more \u2192";
        wrap.parentNode.insertBefore(line, wrap);
      }
      line.hidden = !scrolls;
    });
  }
  fit();
  hint();
  window.addEventListener("resize", function () { fit(); hint(); });
})();
