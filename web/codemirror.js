// The console's HTML code editor: CodeMirror 6 with the HTML language,
// bundled by `make assets` into internal/console/static/vendor/codemirror.min.js,
// an IIFE that defines one global, MailroomCode.
//
//   const editor = MailroomCode.mount(textarea, {nonce})
//   editor.view       the CodeMirror EditorView
//   editor.destroy()  removes the editor and shows the textarea again
//
// mount hides the textarea and puts the editor right after it. The textarea
// stays in its form and gets the editor's text on every change, so an
// ordinary submit posts it. Tab indents; Escape then Tab (or Ctrl-M, which
// toggles it) moves focus out of the editor, as CodeMirror does by default.
//
// CodeMirror styles itself with a <style> element it adds to the page: under
// a Content Security Policy without 'unsafe-inline' for styles, pass the
// response's nonce (style-src 'nonce-…').
import { basicSetup, EditorView } from "codemirror";
import { keymap } from "@codemirror/view";
import { indentWithTab } from "@codemirror/commands";
import { html } from "@codemirror/lang-html";

const mounted = new WeakMap();

// mount replaces textarea with an HTML editor and returns {view, destroy}.
// Mounting the same textarea again returns the editor it already has.
export function mount(textarea, options = {}) {
  if (mounted.has(textarea)) return mounted.get(textarea);

  const attrs = { "aria-multiline": "true" };
  const label = textarea.getAttribute("aria-label") ||
    (textarea.labels && textarea.labels.length ? textarea.labels[0].textContent.trim() : "");
  if (label) attrs["aria-label"] = label;
  if (textarea.readOnly) attrs["aria-readonly"] = "true";

  const extensions = [
    basicSetup,
    keymap.of([indentWithTab]),
    html(),
    EditorView.lineWrapping,
    EditorView.contentAttributes.of(attrs),
    EditorView.editable.of(!textarea.readOnly && !textarea.disabled),
    EditorView.updateListener.of((update) => {
      if (!update.docChanged) return;
      textarea.value = update.state.doc.toString();
      textarea.dispatchEvent(new Event("input", { bubbles: true }));
    }),
  ];
  if (options.nonce) extensions.push(EditorView.cspNonce.of(options.nonce));

  const view = new EditorView({ doc: textarea.value, extensions });
  textarea.insertAdjacentElement("afterend", view.dom);
  const display = textarea.style.display;
  textarea.style.display = "none";

  // A click on the textarea's label focuses the editor instead.
  const focus = (event) => { event.preventDefault(); view.focus(); };
  const labels = Array.from(textarea.labels || []);
  labels.forEach((l) => l.addEventListener("click", focus));

  // A form reset puts the textarea's default back; the editor follows.
  const form = textarea.form;
  const reset = () => setTimeout(() => {
    if (view.state.doc.toString() !== textarea.value) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: textarea.value } });
    }
  });
  if (form) form.addEventListener("reset", reset);

  const editor = {
    view,
    destroy() {
      labels.forEach((l) => l.removeEventListener("click", focus));
      if (form) form.removeEventListener("reset", reset);
      view.destroy();
      textarea.style.display = display;
      mounted.delete(textarea);
    },
  };
  mounted.set(textarea, editor);
  return editor;
}
