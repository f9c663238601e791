(function () {
  "use strict";
  // Filters by status, termination and text. The page reads fine without this script:
  // every scenario is in the HTML, the filters only hide some.
  var state = { status: "", termination: "", q: "" };
  var cards = document.querySelectorAll("#scenarios > details.scenario");
  var shown = document.getElementById("shown");
  var none = document.getElementById("none-shown");
  var query = document.getElementById("q");

  function apply() {
    var count = 0;
    for (var i = 0; i < cards.length; i++) {
      var card = cards[i];
      var visible = (!state.status || card.dataset.status === state.status) &&
        (!state.termination || card.dataset.termination === state.termination) &&
        (!state.q || card.dataset.search.indexOf(state.q) !== -1);
      card.hidden = !visible;
      if (visible) { count++; }
    }
    shown.textContent = count + " of " + cards.length + " shown";
    none.hidden = count !== 0;
  }

  var buttons = document.querySelectorAll("#filters button[data-filter]");
  Array.prototype.forEach.call(buttons, function (button) {
    button.addEventListener("click", function () {
      var key = button.dataset.filter;
      state[key] = button.dataset.value;
      Array.prototype.forEach.call(buttons, function (other) {
        if (other.dataset.filter === key) {
          other.setAttribute("aria-pressed", String(other === button));
        }
      });
      apply();
    });
  });
  query.addEventListener("input", function () {
    state.q = query.value.trim().toLowerCase();
    apply();
  });

  function setOpen(open) {
    for (var i = 0; i < cards.length; i++) {
      if (!cards[i].hidden) { cards[i].open = open; }
    }
  }
  document.getElementById("expand").addEventListener("click", function () { setOpen(true); });
  document.getElementById("collapse").addEventListener("click", function () { setOpen(false); });

  // A link to a scenario (from a chart or the diff) opens it, even when filtered out.
  function openTarget() {
    var id;
    try { id = decodeURIComponent(location.hash.slice(1)); } catch (e) { return; }
    var target = id && document.getElementById(id);
    if (target && target.classList.contains("scenario")) {
      target.hidden = false;
      target.open = true;
      target.scrollIntoView();
    }
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
})();
