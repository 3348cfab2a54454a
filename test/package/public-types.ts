/**
 * Which types a user meets in delayq's public signatures but cannot name: read with the TypeScript
 * compiler API from the .d.ts files an installed package ships. Starting from everything the entry
 * points export, every type a declaration mentions (parameters, results, properties, base types,
 * type arguments, ...) is followed; one declared inside the package that no entry point exports
 * is reported, with the export it was reached from. Private members are not followed: users
 * cannot see them.
 */
import ts from 'typescript';

/** A type of the package that a public signature mentions and no entry point exports. */
export interface UnexportedType {
  name: string;
  /** Its declaration file, relative to the package's directory. */
  file: string;
  /** The exported name whose signature (directly or through other types) mentions it. */
  reachedFrom: string;
}

/**
 * Every type of the package at `packageDir` reachable from the exports of `entries` (module
 * specifiers, e.g. 'delayq/metrics') that none of them exports. `program` must have a root file
 * that imports every entry; `packageDir` is where the package is installed.
 */
export function unexportedTypes(
  program: ts.Program,
  entries: readonly string[],
  packageDir: string,
): UnexportedType[] {
  const checker = program.getTypeChecker();
  const inPackage = (file: ts.SourceFile): boolean =>
    file.fileName.startsWith(packageDir.endsWith('/') ? packageDir : `${packageDir}/`);
  const resolve = (symbol: ts.Symbol): ts.Symbol =>
    symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;

  const exported = new Set<ts.Symbol>();
  const roots: Array<{ symbol: ts.Symbol; name: string }> = [];
  for (const entry of entries) {
    const moduleSymbol = moduleSymbolOf(program, checker, entry);
    for (const symbol of checker.getExportsOfModule(moduleSymbol)) {
      const target = resolve(symbol);
      exported.add(target);
      roots.push({ symbol: target, name: `${entry}: ${symbol.name}` });
    }
  }

  const found = new Map<ts.Symbol, UnexportedType>();
  const seen = new Set<ts.Symbol>();
  const queue = [...roots];
  while (queue.length > 0) {
    const { symbol, name: reachedFrom } = queue.shift()!;
    if (seen.has(symbol)) continue;
    seen.add(symbol);
    for (const declaration of symbol.declarations ?? []) {
      const file = declaration.getSourceFile();
      if (!inPackage(file)) continue;
      if (
        !exported.has(symbol) &&
        !found.has(symbol) &&
        isNamedType(declaration) &&
        !inExportedNamespace(declaration, checker, exported)
      ) {
        found.set(symbol, {
          name: symbol.name,
          file: file.fileName.slice(packageDir.length).replace(/^\//, ''),
          reachedFrom,
        });
      }
      visitPublic(declaration, (reference) => {
        const target = checker.getSymbolAtLocation(reference);
        if (target === undefined) return;
        const resolved = resolve(target);
        if (resolved.flags & ts.SymbolFlags.TypeParameter) return;
        if (!seen.has(resolved)) queue.push({ symbol: resolved, name: reachedFrom });
      });
    }
  }
  return [...found.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** The symbol of module `specifier` as the program's root files import it. */
function moduleSymbolOf(program: ts.Program, checker: ts.TypeChecker, specifier: string): ts.Symbol {
  for (const file of program.getRootFileNames()) {
    const source = program.getSourceFile(file);
    for (const statement of source?.statements ?? []) {
      if (
        (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) &&
        statement.moduleSpecifier !== undefined &&
        ts.isStringLiteral(statement.moduleSpecifier) &&
        statement.moduleSpecifier.text === specifier
      ) {
        const symbol = checker.getSymbolAtLocation(statement.moduleSpecifier);
        if (symbol !== undefined) return symbol;
      }
    }
  }
  throw new Error(`no root file of the program imports '${specifier}' (or it does not resolve)`);
}

/** A declaration a user could want to name in a type: a class, interface, type alias or enum. */
function isNamedType(node: ts.Node): boolean {
  return (
    ts.isClassDeclaration(node) ||
    ts.isInterfaceDeclaration(node) ||
    ts.isTypeAliasDeclaration(node) ||
    ts.isEnumDeclaration(node)
  );
}

/** Whether `node` sits in a namespace that is exported (`StandardSchemaV1.Issue` can be named). */
function inExportedNamespace(node: ts.Node, checker: ts.TypeChecker, exported: Set<ts.Symbol>): boolean {
  for (let parent = node.parent; parent !== undefined; parent = parent.parent) {
    if (!ts.isModuleDeclaration(parent)) continue;
    const symbol = checker.getSymbolAtLocation(parent.name);
    if (symbol !== undefined && exported.has(symbol)) return true;
  }
  return false;
}

/** Calls `onReference` with each name in `node` that refers to a type or value, except in private members. */
function visitPublic(node: ts.Node, onReference: (name: ts.Node) => void): void {
  const visit = (child: ts.Node): void => {
    if (isPrivateMember(child)) return;
    if (ts.isTypeReferenceNode(child)) onReference(rightmost(child.typeName));
    else if (ts.isExpressionWithTypeArguments(child)) onReference(child.expression);
    else if (ts.isTypeQueryNode(child)) onReference(rightmost(child.exprName));
    else if (ts.isImportTypeNode(child) && child.qualifier !== undefined)
      onReference(rightmost(child.qualifier));
    ts.forEachChild(child, visit);
  };
  // A declaration's own name is not a reference; its members, heritage and types are.
  ts.forEachChild(node, visit);
}

function rightmost(name: ts.EntityName | ts.Expression): ts.Node {
  if (ts.isQualifiedName(name)) return name.right;
  if (ts.isPropertyAccessExpression(name)) return name.name;
  return name;
}

function isPrivateMember(node: ts.Node): boolean {
  if (!ts.isClassElement(node)) return false;
  if (node.name !== undefined && ts.isPrivateIdentifier(node.name)) return true;
  return ts.getCombinedModifierFlags(node) & ts.ModifierFlags.Private ? true : false;
}
