/* Karibu portal helpers. Loaded as a file (the CSP allows no inline script); htmx runs with allowEval off. */
(function () {
  "use strict";

  function csrfToken() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }

  /* Every htmx request carries the CSRF token in a header, whatever its verb. */
  document.addEventListener("htmx:configRequest", function (event) {
    var token = csrfToken();
    if (token) {
      event.detail.headers["X-CSRFToken"] = token;
    }
  });

  /* Copy buttons: <button data-copy="element-id">. */
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.className = "visually-hidden";
      document.body.appendChild(area);
      area.select();
      var copied = document.execCommand("copy");
      document.body.removeChild(area);
      if (copied) { resolve(); } else { reject(new Error("copy refused")); }
    });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) { return; }
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) { return; }
    var label = button.getAttribute("data-label") || button.textContent;
    button.setAttribute("data-label", label);
    copyText(source.textContent.trim()).then(function () {
      button.textContent = "Copied";
    }, function () {
      button.textContent = "Select and copy by hand";
    }).then(function () {
      window.setTimeout(function () { button.textContent = label; }, 2000);
    });
  });

  /* Focus after an htmx swap (and after a full page load that answered a form):
     - the first field marked aria-invalid="true" (a failed save), else
     - an element marked data-focus-after-swap: itself when the attribute is empty (a result heading with
       tabindex="-1"), else the element its value selects (e.g. the submit button after a form was filled).
     Elements marked data-announce="<id>" put their data-announce-text (or their text) in that status region. */
  function settleFocus(root) {
    if (!root || !root.querySelector) { return; }
    root.querySelectorAll("[data-announce]").forEach(function (source) {
      var region = document.getElementById(source.getAttribute("data-announce"));
      if (region) { region.textContent = source.getAttribute("data-announce-text") || source.textContent.trim(); }
    });
    var invalid = root.querySelector('[aria-invalid="true"]');
    if (invalid) {
      invalid.focus();
      return;
    }
    var marked = root.querySelector("[data-focus-after-swap]");
    if (!marked) { return; }
    var selector = marked.getAttribute("data-focus-after-swap");
    var target = selector ? document.querySelector(selector) : marked;
    if (target) { target.focus(); }
  }

  document.addEventListener("htmx:afterSettle", function (event) {
    settleFocus(event.detail.target);
  });

  document.addEventListener("DOMContentLoaded", function () {
    if (document.querySelector('main [aria-invalid="true"], main [data-focus-after-swap=""]')) {
      settleFocus(document.querySelector("main"));
    }
  });

  /* Self-refreshing regions (data-pause-while-editing, e.g. the webhook log table): the refresh waits while a
     form field of the page, or anything inside the region, has focus, so nothing typed or focused is lost.
     The refresh asks for as many rows as are shown (older pages loaded included). A one-line summary
     (data-summary) is announced in the status region that names the region (data-announcer) when it changes,
     instead of making the whole table a live region. */
  function isEditing(region) {
    var active = document.activeElement;
    if (!active || active === document.body) { return false; }
    return active.matches("input, select, textarea, [contenteditable]") || region.contains(active);
  }

  document.addEventListener("htmx:beforeRequest", function (event) {
    var region = event.detail.elt;
    if (region.hasAttribute("data-pause-while-editing") && isEditing(region)) {
      event.preventDefault();
    }
  });

  document.addEventListener("htmx:configRequest", function (event) {
    var region = event.detail.elt;
    if (region.hasAttribute && region.hasAttribute("data-pause-while-editing")) {
      event.detail.parameters.rows = region.querySelectorAll("tbody tr:not(.load-more)").length;
    }
  });

  function announceSummaries(initial) {
    document.querySelectorAll("[data-announcer]").forEach(function (announcer) {
      var region = document.getElementById(announcer.getAttribute("data-announcer"));
      if (!region) { return; }
      var summary = region.getAttribute("data-summary") || "";
      if (initial) {
        announcer.setAttribute("data-last", summary);
      } else if (summary !== announcer.getAttribute("data-last")) {
        announcer.setAttribute("data-last", summary);
        announcer.textContent = summary;
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () { announceSummaries(true); });
  document.addEventListener("htmx:afterSettle", function () { announceSummaries(false); });

  /* "Load more": focus moves to the first new row, so keyboard and screen reader users go on from there. */
  var lastRowBeforeLoad = null;
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (target && target.id === "load-more") {  /* the "load more" row, replaced by the next page's rows */
      lastRowBeforeLoad = target.previousElementSibling;
    }
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (!lastRowBeforeLoad) { return; }
    var firstNew = lastRowBeforeLoad.nextElementSibling;
    lastRowBeforeLoad = null;
    if (firstNew && firstNew.id !== "load-more") {
      firstNew.setAttribute("tabindex", "-1");
      firstNew.focus();
    }
  });

  /* A column header that sorts the list also shows its sort in the filter form's sort menu. */
  document.addEventListener("click", function (event) {
    var link = event.target.closest("a.sort-link");
    var menu = document.getElementById("sort");
    if (!link || !menu) { return; }
    var sort = new URL(link.href, window.location.href).searchParams.get("sort") || "-submitted";
    menu.value = sort;
  });

  /* Request failures that the page has no place for are announced in a live region. */
  function toast(message) {
    var region = document.getElementById("toasts");
    if (!region) { return; }
    var item = document.createElement("div");
    item.className = "toast";
    item.setAttribute("role", "status");
    item.textContent = message;
    region.appendChild(item);
    window.setTimeout(function () { item.remove(); }, 6000);
  }

  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    var reasons = {
      400: "The request was refused: check the form and try again.",
      403: "You do not have permission for this action.",
      404: "That item no longer exists.",
      429: "Too many attempts. Wait a moment and try again."
    };
    toast(reasons[xhr.status] || "Something went wrong (" + xhr.status + "). Try again.");
  });

  document.addEventListener("htmx:sendError", function () {
    toast("The server could not be reached. Check your connection and try again.");
  });
})();
