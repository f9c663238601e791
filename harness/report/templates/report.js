(function () {
  "use strict";
  // Filters by status, termination and text. The page reads fine without this script:
  // every scenario is in the HTML, the filters only hide some.
  var state = { status: "", termination: "", q: "" };
  // A large report keeps its cards in blocks (report.html.j2).
  var cards = document.querySelectorAll(
    "#scenarios > details.scenario, #scenarios > div.block > details.scenario");
  var shown = document.getElementById("shown");
  var none = document.getElementById("none-shown");
  var query = document.getElementById("q");

  function apply() {
    for (var i = 0; i < cards.length; i++) {
      var card = cards[i];
      card.hidden = !((!state.status || card.dataset.status === state.status) &&
        (!state.termination || card.dataset.termination === state.termination) &&
        (!state.q || card.dataset.search.indexOf(state.q) !== -1));
    }
    count();
  }

  // Counted from what is visible, so a card a link opened past the filters counts too.
  function count() {
    var visible = 0;
    for (var i = 0; i < cards.length; i++) {
      if (!cards[i].hidden) { visible++; }
    }
    shown.textContent = visible + " of " + cards.length + " shown";
    none.hidden = visible !== 0;
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

  // A large report packs each card's body (deflated, base64: harness/report/cards.py);
  // it is unpacked the first time its card opens, so the page opens with the index alone.
  function unpack(card) {
    var body = card.querySelector(":scope > div.body[data-packed]");
    if (!body) { return; }
    var data = atob(body.getAttribute("data-packed"));
    body.removeAttribute("data-packed");
    var bytes = new Uint8Array(data.length);
    for (var i = 0; i < data.length; i++) { bytes[i] = data.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
    new Response(stream).text().then(function (html) {
      body.innerHTML = html;  // our own escaped markup; the CSP runs no script in it
      body.dataset.unpacked = "";
    });
  }
  // toggle does not bubble: caught on its way down instead.
  document.addEventListener("toggle", function (event) {
    var card = event.target;
    if (card.classList && card.classList.contains("scenario") && card.open) { unpack(card); }
  }, true);

  function setOpen(open) {
    for (var i = 0; i < cards.length; i++) {
      if (!cards[i].hidden) { cards[i].open = open; }
    }
  }
  document.getElementById("expand").addEventListener("click", function () { setOpen(true); });
  document.getElementById("collapse").addEventListener("click", function () { setOpen(false); });

  // A link to a scenario (from a chart or the diff) opens it, even when filtered out.
  function reveal(fragment) {
    var id;
    try { id = decodeURIComponent(fragment); } catch (e) { return null; }
    var target = id && document.getElementById(id);
    if (!target || !target.classList.contains("scenario")) { return null; }
    target.hidden = false;
    target.open = true;
    count();
    return target;
  }
  // Clicks are handled directly: clicking a link to the hash already in the address bar
  // (say, after a filter hid its card again) changes nothing, so no hashchange fires.
  // The browser's own jump to the fragment follows the click, to the now visible card.
  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a") : null;
    var href = link ? link.getAttribute("href") || "" : "";
    if (href.charAt(0) === "#") { reveal(href.slice(1)); }
  });
  // A typed address, the back and forward buttons, and the hash the page opened with.
  function fromHash() {
    var target = reveal(location.hash.slice(1));
    if (target) { target.scrollIntoView(); }
  }
  window.addEventListener("hashchange", fromHash);
  fromHash();

  // Folded runs of alike iterations open on a click.
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button.unfold") : null;
    if (!button) { return; }
    var table = button.closest("table");
    // :scope >: a sub-run's timeline nested in this one has folds of its own.
    var parts = table.querySelectorAll(':scope > tbody[data-fold="' + button.dataset.fold + '"]');
    Array.prototype.forEach.call(parts, function (part) {
      if (part.classList.contains("fold")) { part.hidden = true; }
      part.classList.remove("folded");
    });
  });

  // Open cards' headers stick just below the filter bar, whose height depends on the width.
  var bar = document.getElementById("filters");
  function barHeight() {
    document.documentElement.style.setProperty("--filters-height", bar.offsetHeight + "px");
  }
  window.addEventListener("resize", barHeight);
  barHeight();
})();
