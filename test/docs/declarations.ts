// Compares the declarations docs/api.md quotes (its ```ts blocks that are not
// runnable examples) with what the package's entry points really export, as
// the TypeScript compiler sees them: every documented name exists, documented
// members exist with the same optionality, an exported interface or class has
// no member the doc leaves out, function and method parameters have the
// documented names and count, and documented unions of `kind`s or string
// literals list the same ones. Types of members are left to the reader.
import path from 'node:path'
import ts from 'typescript'

/** One documented function or method signature: its parameter names, `?` and `...` as written. */
interface DocSignature {
  readonly params: readonly string[]
  /** For a parameter written as an object type literal (`options: { a?: … }`): its members and their `?`. */
  readonly literals: ReadonlyArray<DocLiteral | undefined>
}

interface DocLiteral {
  readonly members: ReadonlyMap<string, boolean>
  /** True when the literal is one part of an intersection: the other parts hold members it does not list. */
  readonly partial: boolean
}

interface DocMember {
  readonly optional: boolean
  readonly signatures: DocSignature[]
}

/** Everything the doc says about one name, merged over all blocks that quote it. */
interface DocDeclaration {
  readonly name: string
  readonly kind: 'interface' | 'class' | 'function' | 'type' | 'const'
  readonly members: Map<string, DocMember>
  readonly signatures: DocSignature[]
  /** A union's `kind` literals, or its string literals, when the doc writes the type as such a union. */
  literals?: string[]
  /** False when the doc writes an empty body (a comment inside): its members are listed elsewhere (a table). */
  listsMembers: boolean
}

/** The ```ts blocks of a markdown text, with the line each starts on. */
export function tsBlocks(markdown: string): Array<{ line: number; code: string }> {
  const blocks: Array<{ line: number; code: string }> = []
  const pattern = /^```ts\n([\s\S]*?)^```/gm
  for (let match = pattern.exec(markdown); match !== null; match = pattern.exec(markdown)) {
    blocks.push({ line: markdown.slice(0, match.index).split('\n').length, code: match[1] })
  }
  return blocks
}

const paramText = (p: ts.ParameterDeclaration) => `${p.dotDotDotToken ? '...' : ''}${p.name.getText()}${p.questionToken || p.initializer ? '?' : ''}`

/** The members of an object type literal, or of the literals an intersection or union of them is made of. */
function literalMembers(node: ts.TypeNode | undefined): DocLiteral | undefined {
  if (node === undefined) return undefined
  if (ts.isParenthesizedTypeNode(node)) return literalMembers(node.type)
  if (ts.isTypeLiteralNode(node)) {
    const members = new Map<string, boolean>()
    for (const member of node.members) {
      const name = memberName(member)
      if (name !== undefined) members.set(name, 'questionToken' in member && member.questionToken !== undefined)
    }
    return { members, partial: false }
  }
  // `({ a } | { b }) & { c }`: only the members every reading has are compared (the intersection's literal part)
  if (ts.isIntersectionTypeNode(node)) {
    const part = node.types.map(literalMembers).find((m) => m !== undefined)
    return part && { members: part.members, partial: true }
  }
  return undefined
}

function docSignature(node: ts.SignatureDeclarationBase): DocSignature {
  return { params: node.parameters.map(paramText), literals: node.parameters.map((p) => literalMembers(p.type)) }
}

const memberName = (node: ts.ClassElement | ts.TypeElement) => (node.name && !ts.isComputedPropertyName(node.name) ? node.name.getText() : undefined)

/** The `kind` literals of a union of object types, or the members of a union of string literals. */
function unionLiterals(node: ts.TypeNode): string[] | undefined {
  if (!ts.isUnionTypeNode(node)) return undefined
  const literals: string[] = []
  for (const member of node.types) {
    if (ts.isLiteralTypeNode(member) && ts.isStringLiteral(member.literal)) literals.push(member.literal.text)
    else if (ts.isTypeLiteralNode(member)) {
      const kind = member.members.find((m) => ts.isPropertySignature(m) && m.name.getText() === 'kind') as ts.PropertySignature | undefined
      const literal = kind?.type && ts.isLiteralTypeNode(kind.type) && ts.isStringLiteral(kind.type.literal) ? kind.type.literal.text : undefined
      if (literal === undefined) return undefined
      literals.push(literal)
    } else return undefined
  }
  return literals.sort()
}

/**
 * The declarations the doc's blocks quote. A block with an import is a runnable example and is skipped, as
 * are functions with bodies and consts with values (an example's own helpers).
 */
export function documentedDeclarations(markdown: string): Map<string, DocDeclaration> {
  const found = new Map<string, DocDeclaration>()
  const entry = (name: string, kind: DocDeclaration['kind']) => {
    let declaration = found.get(name)
    if (declaration === undefined) {
      declaration = { name, kind, members: new Map(), signatures: [], listsMembers: true }
      found.set(name, declaration)
    }
    return declaration
  }
  const addMember = (declaration: DocDeclaration, name: string, optional: boolean, signature?: DocSignature) => {
    const member = declaration.members.get(name) ?? { optional, signatures: [] }
    if (signature) member.signatures.push(signature)
    declaration.members.set(name, member)
  }
  for (const { code } of tsBlocks(markdown)) {
    const source = ts.createSourceFile('block.ts', code, ts.ScriptTarget.Latest, true)
    if (source.statements.some((s) => ts.isImportDeclaration(s))) continue
    for (const statement of source.statements) {
      if (ts.isInterfaceDeclaration(statement) || ts.isClassDeclaration(statement)) {
        if (statement.name === undefined) continue
        const declaration = entry(statement.name.text, ts.isInterfaceDeclaration(statement) ? 'interface' : 'class')
        const members: ReadonlyArray<ts.ClassElement | ts.TypeElement> = statement.members
        if (members.length === 0) declaration.listsMembers = false
        for (const member of members) {
          const name = memberName(member)
          if (name === undefined || ts.isConstructorDeclaration(member)) continue
          const optional = 'questionToken' in member && member.questionToken !== undefined
          const isCallable = ts.isMethodSignature(member) || ts.isMethodDeclaration(member)
          addMember(declaration, name, optional, isCallable ? docSignature(member) : undefined)
        }
      } else if (ts.isFunctionDeclaration(statement) && statement.name && statement.body === undefined) {
        entry(statement.name.text, 'function').signatures.push(docSignature(statement))
      } else if (ts.isTypeAliasDeclaration(statement)) {
        const declaration = entry(statement.name.text, 'type')
        declaration.literals = unionLiterals(statement.type)
      } else if (ts.isVariableStatement(statement)) {
        for (const variable of statement.declarationList.declarations) {
          if (variable.initializer === undefined && ts.isIdentifier(variable.name)) entry(variable.name.text, 'const')
        }
      }
    }
  }
  return found
}

/** The exported symbols of each entry point, by name (aliases resolved). */
export function exportedSymbols(root: string, entryFiles: readonly string[]): { checker: ts.TypeChecker; exports: Map<string, ts.Symbol[]> } {
  const config = ts.readConfigFile(path.join(root, 'tsconfig.json'), ts.sys.readFile.bind(ts.sys))
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, root)
  const program = ts.createProgram(entryFiles, { ...options, noEmit: true })
  const checker = program.getTypeChecker()
  const exports = new Map<string, ts.Symbol[]>()
  for (const file of entryFiles) {
    const source = program.getSourceFile(file)
    const module = source && checker.getSymbolAtLocation(source)
    if (module === undefined) throw new Error(`the compiler cannot read ${file}`)
    for (const symbol of checker.getExportsOfModule(module)) {
      const resolved = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
      const list = exports.get(symbol.name) ?? []
      if (!list.includes(resolved)) list.push(resolved)
      exports.set(symbol.name, list)
    }
  }
  return { checker, exports }
}

function realParams(checker: ts.TypeChecker, signature: ts.Signature): string[] {
  return signature.parameters.map((parameter) => {
    const declaration = parameter.valueDeclaration
    if (declaration === undefined || !ts.isParameter(declaration)) return parameter.name
    return `${declaration.dotDotDotToken ? '...' : ''}${parameter.name}${checker.isOptionalParameter(declaration) ? '?' : ''}`
  })
}

const callSignatures = (checker: ts.TypeChecker, type: ts.Type) => checker.getSignaturesOfType(type, ts.SignatureKind.Call)

/** A member the public sees: not `private`/`protected`, not an ECMAScript `#private`. */
function isPublic(symbol: ts.Symbol): boolean {
  if (symbol.name.startsWith('__#') || symbol.name.startsWith('#')) return false
  const declaration = symbol.declarations?.[0]
  if (declaration === undefined) return true
  const flags = ts.getCombinedModifierFlags(declaration)
  return (flags & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) === 0
}

/** The literals a real union type is made of: `kind` discriminants, or string literals. */
function realLiterals(checker: ts.TypeChecker, type: ts.Type): string[] | undefined {
  const members = type.isUnion() ? type.types : [type]
  const literals: string[] = []
  for (const member of members) {
    if (member.isStringLiteral()) literals.push(member.value)
    else {
      const kind = member.getProperty('kind')
      const kindType = kind && checker.getTypeOfSymbol(kind)
      if (kindType?.isStringLiteral()) literals.push(kindType.value)
      else if (member.flags & ts.TypeFlags.Undefined) continue
      else return undefined
    }
  }
  return literals.sort()
}

/** What differs between a documented object-literal parameter and the real parameter's type, by member. */
function literalProblems(where: string, documented: DocLiteral, real: ts.Type, checker: ts.TypeChecker): string[] {
  const problems: string[] = []
  const properties = new Map(checker.getPropertiesOfType(checker.getNonNullableType(real)).map((p) => [p.name, (p.flags & ts.SymbolFlags.Optional) !== 0]))
  for (const [name, optional] of documented.members) {
    const actual = properties.get(name)
    if (actual === undefined) problems.push(`${where}.${name}: documented, but the code has no such member`)
    else if (actual !== optional)
      problems.push(`${where}.${name}: documented as ${optional ? 'optional' : 'required'}, the code makes it ${actual ? 'optional' : 'required'}`)
  }
  if (documented.partial) return problems
  for (const name of properties.keys()) if (!documented.members.has(name)) problems.push(`${where}.${name}: exported, but docs/api.md does not list it`)
  return problems
}

function signatureProblems(where: string, documented: readonly DocSignature[], real: readonly ts.Signature[], checker: ts.TypeChecker): string[] {
  const problems: string[] = []
  const texts = real.map((signature) => realParams(checker, signature).join(', '))
  for (const signature of documented) {
    const text = signature.params.join(', ')
    const match = real[texts.indexOf(text)]
    if (match === undefined) {
      problems.push(`${where}(${text}): no such signature; the code has ${texts.map((params) => `(${params})`).join(' or ') || 'none'}`)
      continue
    }
    signature.literals.forEach((members, i) => {
      const parameter = match.parameters[i]
      if (members !== undefined && parameter !== undefined) {
        problems.push(...literalProblems(`${where}(${parameter.name})`, members, checker.getTypeOfSymbol(parameter), checker))
      }
    })
  }
  return problems
}

/** What docs/api.md gets wrong about the code; empty when they agree. */
export function declarationProblems(markdown: string, checker: ts.TypeChecker, exports: Map<string, ts.Symbol[]>): string[] {
  const problems: string[] = []
  for (const declaration of documentedDeclarations(markdown).values()) {
    const { name } = declaration
    const symbols = exports.get(name)
    if (symbols === undefined) {
      problems.push(`${name}: documented, but no entry point exports it`)
      continue
    }
    // a name two entry points export differently need only agree with one of them
    const attempts = symbols.map((symbol) => symbolProblems(declaration, symbol, checker))
    if (!attempts.some((list) => list.length === 0)) problems.push(...attempts[0])
  }
  return problems
}

function symbolProblems(declaration: DocDeclaration, symbol: ts.Symbol, checker: ts.TypeChecker): string[] {
  const { name } = declaration
  const problems: string[] = []
  if (declaration.kind === 'function') {
    return signatureProblems(name, declaration.signatures, callSignatures(checker, checker.getTypeOfSymbol(symbol)), checker)
  }
  if (declaration.kind === 'type') {
    const type = checker.getDeclaredTypeOfSymbol(symbol)
    if (declaration.literals !== undefined) {
      const real = realLiterals(checker, type)
      if (real !== undefined && real.join('|') !== declaration.literals.join('|')) {
        problems.push(`${name}: documented as ${declaration.literals.join(' | ')}, the code has ${real.join(' | ')}`)
      }
    }
    return problems
  }
  if (declaration.kind === 'const') return problems
  // interfaces and classes: the instance side
  const type = checker.getDeclaredTypeOfSymbol(symbol)
  const properties = new Map(
    checker
      .getPropertiesOfType(type)
      .filter(isPublic)
      .map((p) => [p.name, p]),
  )
  for (const [memberName, member] of declaration.members) {
    const real = properties.get(memberName)
    if (real === undefined) {
      problems.push(`${name}.${memberName}: documented, but the code has no such member`)
      continue
    }
    const optional = (real.flags & ts.SymbolFlags.Optional) !== 0
    if (optional !== member.optional)
      problems.push(
        `${name}.${memberName}: documented as ${member.optional ? 'optional' : 'required'}, the code makes it ${optional ? 'optional' : 'required'}`,
      )
    if (member.signatures.length > 0) {
      const memberType = checker.getNonNullableType(checker.getTypeOfSymbol(real))
      problems.push(...signatureProblems(`${name}.${memberName}`, member.signatures, callSignatures(checker, memberType), checker))
    }
  }
  if (declaration.listsMembers) {
    // members declared by the type itself must be listed (inherited ones are documented with their base)
    const own = new Set(symbol.declarations ?? [])
    for (const [memberName, real] of properties) {
      const declaredHere = real.declarations?.some((d) => own.has(d.parent as ts.Declaration)) ?? false
      if (declaredHere && !declaration.members.has(memberName)) problems.push(`${name}.${memberName}: exported, but docs/api.md does not list it`)
    }
  }
  return problems
}
