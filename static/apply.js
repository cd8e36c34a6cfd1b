/* Apply form: after a refused submission the list of mistakes takes the focus. The phone number is checked as
   soon as the applicant leaves the field, with the server's own rule (the pattern and the ignored characters
   come from the page) and its message in the page's language. The form still sends on submit, so the server
   shows every other mistake with this one at once. */
(function () {
  "use strict";

  document.addEventListener("DOMContentLoaded", function () {
    var summary = document.getElementById("error-summary");
    if (summary) { summary.focus(); }  // a refused submission: the list of mistakes is read first
    var phone = document.querySelector("[data-phone-pattern]");
    if (!phone) { return; }
    var pattern = new RegExp(phone.dataset.phonePattern);
    var ignored = new RegExp(phone.dataset.phoneIgnored, "g");
    var errorId = phone.id + "-error";

    function problem() {
      var digits = phone.value.replace(ignored, "");
      if (!digits) { return phone.dataset.requiredMessage; }
      return pattern.test(digits) ? null : phone.dataset.phoneMessage;
    }

    function describedBy(add) {
      var ids = (phone.getAttribute("aria-describedby") || "").split(" ").filter(function (id) {
        return id && id !== errorId;
      });
      if (add) { ids.push(errorId); }
      if (ids.length) { phone.setAttribute("aria-describedby", ids.join(" ")); }
      else { phone.removeAttribute("aria-describedby"); }
    }

    function show(message) {
      var error = document.getElementById(errorId);
      if (message) {
        if (!error) {
          error = document.createElement("p");
          error.className = "error";
          error.id = errorId;
          phone.insertAdjacentElement("afterend", error);
        }
        error.textContent = message;
        phone.setAttribute("aria-invalid", "true");
      } else {
        if (error) { error.remove(); }
        phone.removeAttribute("aria-invalid");
      }
      describedBy(Boolean(message));
    }

    phone.addEventListener("change", function () { show(problem()); });
    phone.addEventListener("input", function () {
      if (phone.getAttribute("aria-invalid") === "true" && !problem()) { show(null); }
    });
  });
}());
