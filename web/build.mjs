// build.mjs writes the console's browser libraries into one directory (the
// first argument; make assets passes internal/console/static/vendor): the
// packages' own minified files copied as they are, codemirror.js bundled by
// esbuild into codemirror.min.js, and LICENSES.txt with the license of every
// package any of them contains. It runs after `npm ci`, so the versions are
// those of package-lock.json; the output holds no dates or paths of this
// machine, and the same lock file gives the same bytes.
import { readFileSync, writeFileSync, mkdirSync, readdirSync, rmSync, copyFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2];
if (!out) {
  console.error("usage: node build.mjs OUTDIR");
  process.exit(2);
}

const modules = join(here, "node_modules");
const pkg = (name) => JSON.parse(readFileSync(join(modules, name, "package.json"), "utf8"));

// wrap joins items with ", " into lines of at most 72 characters, each
// after the first indented by two spaces.
const wrap = (first, items) => {
  const lines = [first];
  for (const [i, it] of items.entries()) {
    const piece = it + (i < items.length - 1 ? "," : "");
    const last = lines.length - 1;
    if (lines[last].length + 1 + piece.length > 72 && lines[last].trim() !== "") lines.push("  " + piece);
    else lines[last] += (lines[last] === "" ? "" : " ") + piece;
  }
  return lines.join("\n") + "\n";
};

// copies are the packages' own builds, shipped unchanged.
const copies = [
  { pkg: "htmx.org", from: "dist/htmx.min.js", to: "htmx.min.js" },
  { pkg: "uplot", from: "dist/uPlot.iife.min.js", to: "uPlot.iife.min.js" },
  { pkg: "uplot", from: "dist/uPlot.min.css", to: "uPlot.min.css" },
  { pkg: "sortablejs", from: "Sortable.min.js", to: "Sortable.min.js" },
];

// The directory is this script's alone: start it empty so a file dropped
// from the list does not linger.
mkdirSync(out, { recursive: true });
for (const f of readdirSync(out)) rmSync(join(out, f), { recursive: true });

const shipped = new Map(); // file -> package names in it
for (const c of copies) {
  copyFileSync(join(modules, c.pkg, c.from), join(out, c.to));
  shipped.set(c.to, [c.pkg]);
}

// The bundle: esbuild resolves the imports of codemirror.js, and its
// metafile says which packages ended up in the output.
const bundle = await esbuild.build({
  entryPoints: [join(here, "codemirror.js")],
  bundle: true,
  format: "iife",
  globalName: "MailroomCode",
  minify: true,
  target: "es2020",
  legalComments: "none",
  charset: "utf8",
  metafile: true,
  write: false,
  absWorkingDir: here,
  logLevel: "warning",
});
const bundled = new Set();
for (const input of Object.keys(bundle.metafile.inputs)) {
  const m = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//);
  if (m) bundled.add(m[1]);
}
const inBundle = [...bundled].sort();
const banner = "/*! MailroomCode (web/codemirror.js) bundled by esbuild " + esbuild.version +
  " from " + inBundle.map((n) => n + " " + pkg(n).version).join(", ") +
  "; licenses in LICENSES.txt */\n";
writeFileSync(join(out, "codemirror.min.js"), banner + bundle.outputFiles[0].text);
shipped.set("codemirror.min.js", inBundle);

// LICENSES.txt: which file holds which package, then each license text
// once, with the packages that carry that same text.
const files = [...shipped.keys()].sort();
const names = [...new Set([...shipped.values()].flat())].sort();
let text = "Third-party libraries in this directory, installed with npm from\n" +
  "web/package-lock.json and written here by `make assets` (web/build.mjs).\n\n";
for (const f of files) {
  text += wrap(f + ":", shipped.get(f).map((n) => n + " " + pkg(n).version));
}
const byText = new Map(); // license text -> package names
for (const n of names) {
  const dir = join(modules, n);
  const file = readdirSync(dir).filter((f) => /^licen[cs]e/i.test(f)).sort()[0];
  if (!file) throw new Error(n + ": no LICENSE file");
  const t = readFileSync(join(dir, file), "utf8").replace(/\r\n/g, "\n").trim() + "\n";
  byText.set(t, [...(byText.get(t) || []), n]);
}
for (const [t, ns] of byText) {
  const head = wrap("", ns.map((n) => n + " " + pkg(n).version + " (" + pkg(n).license + ")"));
  text += "\n" + "=".repeat(72) + "\n" + head + "=".repeat(72) + "\n\n" + t;
}
writeFileSync(join(out, "LICENSES.txt"), text);

for (const f of [...files, "LICENSES.txt"]) {
  console.log(String(readFileSync(join(out, f)).length).padStart(8) + "  " + join(out, f));
}
