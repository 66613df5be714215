// mailroom design editor: the little the editor page needs beyond HTML.
// The server renders every block's fields and is the source of truth: this
// script keeps the hidden template_json field equal to what the fields
// say, moves blocks (drag with SortableJS, or the move buttons), adds and
// removes blocks and list items from the server's <template>s, inserts
// placeholders, uploads images, and asks the server for the preview (into
// the sandboxed frame) and the plain-text part. No inline script, no
// framework; text goes into the page as text, never as markup.
(function () {
  "use strict";
  var form = document.getElementById("design-form");
  if (!form) return;
  var mode = form.getAttribute("data-mode");
  var writable = form.getAttribute("data-writable") === "true";
  var jsonField = document.getElementById("template-json");
  var list = document.getElementById("blocks");
  var refresh = document.getElementById("refresh");
  var textPart = document.getElementById("text-part");
  var status = document.getElementById("status");
  var announcer = document.getElementById("announce");
  var csrf = form.querySelector('input[name="csrf"]').value;
  var dirty = form.getAttribute("data-dirty") === "true";
  var leaving = false;
  var code = null; // the CodeMirror editor in code mode
  var lastField = null; // where a placeholder goes

  function announce(msg) {
    announcer.textContent = "";
    window.setTimeout(function () { announcer.textContent = msg; }, 50);
  }

  // --- The document, read from the fields -------------------------------

  // collect reads the fields that belong to scope (not to a nested
  // block, item or the settings): strings as typed (empty ones left out,
  // as the document omits them), data-kind int as numbers, bool as true.
  function collect(scope) {
    var o = {};
    scope.querySelectorAll("[data-key]").forEach(function (el) {
      if (el.closest("[data-scope]") !== scope) return;
      var k = el.getAttribute("data-key"), kind = el.getAttribute("data-kind");
      if (kind === "bool") {
        if (el.type === "checkbox" ? el.checked : el.value === "true") o[k] = true;
        return;
      }
      var v = el.value;
      if (v === "") return;
      if (kind === "int" && /^-?\d+$/.test(v.trim())) {
        o[k] = parseInt(v, 10);
        return;
      }
      o[k] = v; // a number that is none: the server says what is wrong
    });
    return o;
  }

  function blocks() {
    return list ? Array.prototype.slice.call(list.children).filter(function (li) { return li.hasAttribute("data-block"); }) : [];
  }

  function serialize() {
    if (!jsonField || !list) return;
    var settings = form.querySelector('[data-scope="settings"]');
    var doc = { version: 1, name: form.querySelector('[data-doc="name"]').value, settings: collect(settings), blocks: [] };
    blocks().forEach(function (li) {
      var b = { type: li.getAttribute("data-type") };
      var fields = collect(li);
      Object.keys(fields).forEach(function (k) { b[k] = fields[k]; });
      li.querySelectorAll("[data-list]").forEach(function (fs) {
        if (fs.closest("[data-block]") !== li) return;
        var items = [];
        fs.querySelectorAll("[data-item]").forEach(function (it) { items.push(collect(it)); });
        if (items.length) b[fs.getAttribute("data-list")] = items;
      });
      doc.blocks.push(b);
    });
    jsonField.value = JSON.stringify(doc);
  }

  // --- Blocks -------------------------------------------------------------

  function renumber() {
    blocks().forEach(function (li, i) {
      var n = i + 1, label = li.getAttribute("data-label");
      li.querySelector(".block-n").textContent = n;
      var what = "block " + n + " (" + label + ")";
      li.querySelectorAll("[data-move]").forEach(function (b) {
        b.setAttribute("aria-label", "Move " + what + " " + b.getAttribute("data-move"));
      });
      var rm = li.querySelector("[data-remove]");
      if (rm) rm.setAttribute("aria-label", "Remove " + what);
    });
  }

  function footer() {
    return list && list.querySelector(":scope > .fixed");
  }

  function move(li, dir) {
    var sib = dir < 0 ? li.previousElementSibling : li.nextElementSibling;
    if (!sib || sib.classList.contains("fixed")) {
      announce(li.getAttribute("data-label") + " is already " + (dir < 0 ? "first." : "last before the footer."));
      return;
    }
    if (dir < 0) list.insertBefore(li, sib); else list.insertBefore(sib, li);
    renumber();
    changed();
    var btn = li.querySelector('[data-move="' + (dir < 0 ? "up" : "down") + '"]');
    if (btn) btn.focus();
    announce(li.getAttribute("data-label") + " moved to place " + (blocks().indexOf(li) + 1) + " of " + blocks().length + ".");
  }

  function addBlock(type) {
    var tpl = document.getElementById("new-" + type);
    if (!tpl) return;
    var li = tpl.content.firstElementChild.cloneNode(true);
    var f = footer();
    list.insertBefore(li, f || null);
    renumber();
    changed();
    var first = li.querySelector("input, textarea, select");
    if (first) first.focus();
    announce(li.getAttribute("data-label") + " added at place " + (blocks().indexOf(li) + 1) + ".");
  }

  function removeBlock(li) {
    var next = li.nextElementSibling || li.previousElementSibling;
    var label = li.getAttribute("data-label");
    li.remove();
    renumber();
    changed();
    var target = next && (next.querySelector("[data-remove]") || next.querySelector("summary"));
    (target || document.getElementById("add-block")).focus();
    announce(label + " removed.");
  }

  if (list && writable && window.Sortable) {
    window.Sortable.create(list, {
      handle: ".drag",
      draggable: ".block:not(.fixed)",
      animation: 120,
      // Sortable's own pointer handling instead of the browser's drag and
      // drop: the same in every browser, on touch screens and under
      // automation (the browser tests drag with the mouse).
      forceFallback: true,
      // Nothing goes below the footer.
      onMove: function (evt) { return !(evt.related.classList.contains("fixed") && evt.willInsertAfter); },
      onEnd: function () { renumber(); changed(); }
    });
  }

  form.addEventListener("click", function (e) {
    var t = e.target.closest("button");
    if (!t || !writable) return;
    var li = t.closest("[data-block]");
    if (t.hasAttribute("data-move")) {
      move(li, t.getAttribute("data-move") === "up" ? -1 : 1);
    } else if (t.hasAttribute("data-remove")) {
      removeBlock(li);
    } else if (t.id === "add-block") {
      addBlock(document.getElementById("add-type").value);
    } else if (t.hasAttribute("data-add-item")) {
      var fs = t.closest("[data-list]");
      var item = fs.querySelector(":scope > template").content.firstElementChild.cloneNode(true);
      fs.querySelector(":scope > .items").appendChild(item);
      changed();
      var first = item.querySelector("input, textarea");
      if (first) first.focus();
    } else if (t.hasAttribute("data-remove-item")) {
      var box = t.closest("[data-list]");
      t.closest("[data-item]").remove();
      changed();
      box.querySelector("[data-add-item]").focus();
    } else if (t.id === "insert-placeholder") {
      insertPlaceholder("((" + document.getElementById("placeholder").value + "))");
    } else {
      return;
    }
    e.preventDefault();
  });

  // --- Placeholders -------------------------------------------------------

  form.addEventListener("focusin", function (e) {
    var el = e.target;
    if ((el.tagName === "TEXTAREA" || (el.tagName === "INPUT" && el.type === "text")) && el.hasAttribute("data-key")) lastField = el;
  });

  function insertPlaceholder(text) {
    if (code) {
      code.view.dispatch(code.view.state.replaceSelection(text));
      code.view.focus();
      return;
    }
    var el = lastField;
    if (!el || !document.body.contains(el)) {
      announce("Choose a field first: the placeholder goes where its cursor is.");
      return;
    }
    var start = el.selectionStart == null ? el.value.length : el.selectionStart;
    var end = el.selectionEnd == null ? start : el.selectionEnd;
    el.value = el.value.slice(0, start) + text + el.value.slice(end);
    el.focus();
    el.setSelectionRange(start + text.length, start + text.length);
    el.dispatchEvent(new Event("input", { bubbles: true }));
  }

  // --- Images ----------------------------------------------------------------

  form.addEventListener("change", function (e) {
    var input = e.target;
    if (!input.hasAttribute || !input.hasAttribute("data-upload") || !input.files.length) return;
    e.stopImmediatePropagation();
    var li = input.closest("[data-block]");
    var out = li.querySelector(".upload-status");
    out.textContent = "Uploading…";
    var body = new FormData();
    body.append("file", input.files[0]);
    fetch(form.getAttribute("data-upload"), { method: "POST", body: body, credentials: "same-origin", headers: { "X-CSRF-Token": csrf } })
      .then(function (res) { return res.json().then(function (j) { return { ok: res.ok, j: j }; }); })
      .then(function (r) {
        input.value = "";
        if (!r.ok) {
          out.textContent = (r.j.errors && r.j.errors.file && r.j.errors.file[0]) || "The upload was refused.";
          return;
        }
        var field = function (k) { return li.querySelector('[data-key="' + k + '"]'); };
        field("src").value = r.j.url;
        if (!field("alt").value) field("alt").value = r.j.name;
        // Its width in the mail: the block's, or the column's (the content
        // width less the block's 40 px sides), never wider than the image;
        // its height at that width, for Outlook and blocked images.
        var settingsWidth = parseInt(form.querySelector('[data-scope="settings"] [data-key="width"]').value, 10) || 600;
        var w = parseInt(field("width").value, 10) || settingsWidth - 80;
        if (r.j.width < w) {
          w = r.j.width;
          field("width").value = w;
        }
        field("height").value = Math.round(r.j.height * w / r.j.width);
        out.textContent = "Uploaded: " + r.j.width + " × " + r.j.height + " pixels.";
        field("src").dispatchEvent(new Event("input", { bubbles: true }));
      })
      .catch(function () { out.textContent = "The upload failed. Try again."; });
  });

  // --- Preview, text part, saving ------------------------------------------

  var timer = null;
  function schedulePreview() {
    window.clearTimeout(timer);
    timer = window.setTimeout(preview, 600);
  }
  function changed() {
    serialize();
    dirty = true;
    status.textContent = "Not saved yet.";
    schedulePreview();
  }
  // isDesign: el is a field of the design (not the add menu, the
  // placeholder menu, the preview's contact or the test's addresses).
  function isDesign(el) {
    return el.hasAttribute && (el.hasAttribute("data-key") || el.hasAttribute("data-doc") || el.id === "template-html");
  }
  // A block's bar shows the start of its first text, as the server does.
  function summarize(li) {
    var out = li.querySelector(".block-summary");
    if (!out) return;
    var keys = ["text", "title", "alt", "sender", "src"];
    for (var i = 0; i < keys.length; i++) {
      var el = li.querySelector('[data-key="' + keys[i] + '"]');
      var v = el && el.closest("[data-scope]") === li ? el.value.replace(/\s+/g, " ").trim() : "";
      if (v) {
        out.textContent = v.length > 60 ? v.slice(0, 59) + "…" : v;
        return;
      }
    }
    out.textContent = "";
  }

  form.addEventListener("input", function (e) {
    if (e.target.id === "preview-contact") schedulePreview();
    if (!isDesign(e.target)) return;
    var li = e.target.closest("[data-block]");
    if (li) summarize(li);
    changed();
  });
  form.addEventListener("change", function (e) {
    if (isDesign(e.target) && (e.target.tagName === "SELECT" || e.target.type === "checkbox")) changed();
  });

  function preview() {
    serialize();
    if (refresh) form.requestSubmit(refresh);
    if (!textPart) return;
    fetch(form.getAttribute("data-text"), { method: "POST", body: new FormData(form), credentials: "same-origin",
      headers: { "X-CSRF-Token": csrf } })
      .then(function (res) {
        textPart.classList.toggle("text-error", !res.ok);
        return res.text();
      })
      .then(function (t) { textPart.textContent = t; })
      .catch(function () { textPart.textContent = "The text part could not be loaded."; });
  }

  form.addEventListener("submit", function (e) {
    serialize();
    if (e.submitter && e.submitter.id === "refresh") return;
    leaving = true;
  });
  window.addEventListener("beforeunload", function (e) {
    if (dirty && !leaving && writable) {
      e.preventDefault();
      e.returnValue = "";
    }
  });

  document.querySelectorAll("[data-width]").forEach(function (b) {
    b.addEventListener("click", function () {
      document.getElementById("frame-wrap").className = "frame-wrap " + b.getAttribute("data-width");
      document.querySelectorAll("[data-width]").forEach(function (o) { o.setAttribute("aria-pressed", String(o === b)); });
    });
  });

  if (mode === "code" && window.MailroomCode) {
    code = window.MailroomCode.mount(document.getElementById("template-html"), { nonce: form.getAttribute("data-nonce") });
  }
  preview();
})();
