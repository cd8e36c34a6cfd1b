/* The applicants list's bulk bar: row selection, "select all N matching", and what follows a confirmed change.
   Loaded by the applicants page only (the CSP allows no inline script). Texts come from the page, translated. */
(function () {
  "use strict";

  /* Checkboxes named "ids" belong to the form given by their form= attribute. */
  function selectionFor(formId) {
    return Array.prototype.slice.call(
      document.querySelectorAll('input[type="checkbox"][name="ids"][form="' + formId + '"]')
    );
  }

  function matchingBlock(formId) {
    return document.querySelector('[data-select-matching="' + formId + '"]');
  }

  function matchingChosen(formId) {
    var block = matchingBlock(formId);
    return Boolean(block) && block.getAttribute("data-chosen") === "true";
  }

  /* The bar's count: the rows ticked, or once "all N matching" is chosen, the same N as the banner. The
     catalogue's singular or plural is chosen by the page language's plural rule (CLDR, as gettext's). */
  function countText(counter, chosen) {
    if (chosen === 0) { return counter.getAttribute("data-text-zero"); }
    var language = document.documentElement.lang || undefined;
    var form = new Intl.PluralRules(language).select(chosen) === "one" ? "data-text-one" : "data-text-other";
    return counter.getAttribute(form).replace("{count}", chosen.toLocaleString(language));
  }

  function refreshCount(formId) {
    var counter = document.querySelector('[data-selected-count="' + formId + '"]');
    if (!counter) { return; }
    var chosen = selectionFor(formId).filter(function (box) { return box.checked; }).length;
    counter.textContent = matchingChosen(formId)
      ? matchingBlock(formId).getAttribute("data-selected-text")
      : countText(counter, chosen);
  }

  function refreshSelection(formId) {
    var boxes = selectionFor(formId);
    var chosen = boxes.filter(function (box) { return box.checked; }).length;
    var all = document.querySelector('[data-select-all="' + formId + '"]');
    if (all) {
      all.checked = boxes.length > 0 && chosen === boxes.length;
      all.indeterminate = chosen > 0 && chosen < boxes.length;
    }
    var form = document.getElementById(formId);
    if (form) {
      form.querySelectorAll("[data-needs-selection]").forEach(function (control) {
        control.disabled = chosen === 0;
      });
    }
    refreshMatching(formId, boxes.length > 0 && chosen === boxes.length);
    refreshCount(formId);
  }

  /* "Select all N matching": offered once every loaded row is selected and more rows match than are loaded.
     Choosing it swaps "Apply to selected" for "Apply to all N matching" (a button posting to its own URL);
     both ask the same confirmation in the bar. */
  function setMatching(formId, on) {
    var block = matchingBlock(formId);
    if (!block) { return; }
    block.setAttribute("data-chosen", on ? "true" : "false");
    block.querySelector("[data-matching-offer]").hidden = on;
    block.querySelector("[data-matching-chosen]").hidden = !on;
    block.querySelector("[data-matching-submit]").hidden = !on;
    var form = document.getElementById(formId);
    if (form) {
      form.querySelectorAll("[data-needs-selection]").forEach(function (control) { control.hidden = on; });
    }
    refreshCount(formId);
  }

  function refreshMatching(formId, allShownSelected) {
    var block = matchingBlock(formId);
    if (!block) { return; }
    var moreToLoad = document.getElementById("load-more") !== null;
    if (!allShownSelected) { setMatching(formId, false); }
    block.hidden = !(allShownSelected && (moreToLoad || block.getAttribute("data-chosen") === "true"));
  }

  /* A confirmation asked for one selection and change is dropped when either changes: it must be asked again. */
  function dropConfirmation(formId) {
    var form = document.getElementById(formId);
    var question = form && form.querySelector("[data-bulk-confirm]");
    if (question) { question.remove(); }
  }

  document.addEventListener("click", function (event) {
    var on = event.target.closest("[data-select-matching-on]");
    var off = event.target.closest("[data-select-matching-off]");
    if (!on && !off) { return; }
    var block = event.target.closest("[data-select-matching]");
    var formId = block.getAttribute("data-select-matching");
    dropConfirmation(formId);
    if (on) {
      setMatching(formId, true);
      block.querySelector("[data-select-matching-off]").focus();
    } else {
      selectionFor(formId).forEach(function (box) { box.checked = false; });
      setMatching(formId, false);
      refreshSelection(formId);
      var all = document.querySelector('[data-select-all="' + formId + '"]');
      if (all) { all.focus(); }
    }
  });

  document.addEventListener("change", function (event) {
    var target = event.target;
    var allFor = target.getAttribute && target.getAttribute("data-select-all");
    if (allFor) {
      selectionFor(allFor).forEach(function (box) { box.checked = target.checked; });
      dropConfirmation(allFor);
      refreshSelection(allFor);
      return;
    }
    if (target.name === "ids" && target.getAttribute("form")) {
      dropConfirmation(target.getAttribute("form"));
      refreshSelection(target.getAttribute("form"));
      return;
    }
    var form = target.form;
    if (form && form.classList.contains("bulk") && ["stage", "decision", "send_decision"].indexOf(target.name) >= 0) {
      dropConfirmation(form.id);
    }
  });

  /* A change that was applied (data-bulk-done) cannot be applied again by accident: the selection and the
     change are cleared, "Apply to all N matching" goes away, and a new change needs a new confirmation. */
  function clearAfterChange() {
    document.querySelectorAll("form.bulk").forEach(function (form) {
      var done = form.querySelector("[data-bulk-done]:not([data-bulk-handled])");
      if (!done) { return; }
      done.setAttribute("data-bulk-handled", "");
      selectionFor(form.id).forEach(function (box) { box.checked = false; });
      form.querySelectorAll("select").forEach(function (select) { select.value = ""; });
      form.querySelectorAll('input[name="send_decision"]').forEach(function (box) { box.checked = false; });
      setMatching(form.id, false);
    });
  }

  function refreshAllSelections() {
    clearAfterChange();
    document.querySelectorAll("[data-select-all]").forEach(function (all) {
      refreshSelection(all.getAttribute("data-select-all"));
    });
  }

  document.addEventListener("DOMContentLoaded", refreshAllSelections);
  document.addEventListener("htmx:afterSettle", refreshAllSelections);
})();
