/**
 * The charts of the benchmark page, as SVG written by plain code: plots on logarithmic axes and groups of bars, each
 * point at one concurrency with a whisker over the range the others gave. GitHub shows an SVG that a page links as an
 * image inline, without its scripts or external fonts, so a chart holds neither.
 */

export interface Point {
  x: number
  y: number
  /** The range of the same figure at the other concurrencies, drawn as a whisker. */
  low: number
  high: number
}

export interface Series {
  label: string
  color: string
  /** A dashed or dotted line: an SVG stroke-dasharray. */
  dash?: string
  points: Point[]
}

export interface Bar {
  label: string
  color: string
  value: number
  low: number
  high: number
}

export interface BarGroup {
  label: string
  bars: Bar[]
}

/**
 * An axis: what it measures, how a value is written at a tick, and its scale: logarithmic with a tick at each power of
 * `base`, or linear from 0.
 */
export interface Axis {
  title: string
  format: (value: number) => string
  scale: { log: number } | 'linear'
}

export interface Axes {
  x: Axis
  y: Axis
}

/** A horizontal line across a plot, with its label: a limit, or the reference a ratio is taken to. */
export interface Guide {
  y: number
  label: string
}

export interface LinePlot {
  kind: 'lines'
  title: string
  axes: Axes
  series: Series[]
  guides?: Guide[]
}

export interface BarPlot {
  kind: 'bars'
  title: string
  yTitle: string
  format: (value: number) => string
  groups: BarGroup[]
  guides?: Guide[]
}

export type Panel = LinePlot | BarPlot

const FONT = 'font-family="Helvetica, Arial, sans-serif"'
const TEXT = '#24292f'
const GRID = '#d0d7de'
const HEIGHT = 340
const MARGIN = { top: 44, right: 28, bottom: 56, left: 64 }
const LEGEND_LINE = 18

const escapeXml = (text: string): string => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;')
const fixed = (value: number): string => String(Math.round(value * 10) / 10)

function text (x: number, y: number, content: string, options: { anchor?: 'start' | 'middle' | 'end', size?: number, weight?: 'bold', rotate?: boolean } = {}): string {
  const rotate = options.rotate === true ? ` transform="rotate(-90 ${fixed(x)} ${fixed(y)})"` : ''
  return `<text x="${fixed(x)}" y="${fixed(y)}" font-size="${options.size ?? 12}" text-anchor="${options.anchor ?? 'start'}"${options.weight === undefined ? '' : ` font-weight="${options.weight}"`} fill="${TEXT}"${rotate}>${escapeXml(content)}</text>`
}

const line = (x1: number, y1: number, x2: number, y2: number, stroke: string, extra = ''): string =>
  `<line x1="${fixed(x1)}" y1="${fixed(y1)}" x2="${fixed(x2)}" y2="${fixed(y2)}" stroke="${stroke}"${extra}/>`

/** The powers of `base` from the one at or below the smallest value to the one at or above the largest: a log axis's ticks. */
export function powers (values: readonly number[], base: number): number[] {
  const positive = values.filter((value) => value > 0 && Number.isFinite(value))
  if (positive.length === 0) return [1, base]
  const exponent = (value: number): number => Math.log(value) / Math.log(base)
  // Rounded first, so that a value that is a power of the base (1024 = 4^5) is its own tick.
  const from = Math.floor(Number(exponent(Math.min(...positive)).toFixed(9)))
  const to = Math.max(from + 1, Math.ceil(Number(exponent(Math.max(...positive)).toFixed(9))))
  return Array.from({ length: to - from + 1 }, (_, index) => base ** (from + index))
}

/** Five ticks from 0 to a round value at or above the largest: a linear axis's. */
export function linearTicks (values: readonly number[]): number[] {
  const top = niceCeiling(Math.max(...values.filter(Number.isFinite), Number.MIN_VALUE))
  return Array.from({ length: 5 }, (_, index) => top * index / 4)
}

function ticksOf (axis: Axis, values: readonly number[]): number[] {
  return axis.scale === 'linear' ? linearTicks(values) : powers(values, axis.scale.log)
}

/** A scale from [first, last] of `ticks` to [start, end] in pixels, on the axis's scale. */
function scaleOf (axis: Axis, ticks: readonly number[], start: number, end: number): (value: number) => number {
  const position = axis.scale === 'linear' ? (value: number) => value : Math.log
  const low = position(ticks[0] as number)
  const high = position(ticks[ticks.length - 1] as number)
  return (value) => start + (position(value) - low) / (high - low) * (end - start)
}

/** The legend under a panel: a sample of each series' line and its label, as many to a row as fit. */
function legend (entries: ReadonlyArray<{ label: string, color: string, dash?: string }>, left: number, top: number, width: number): { svg: string, height: number } {
  const svg: string[] = []
  let x = left
  let y = top
  for (const entry of entries) {
    const entryWidth = 30 + entry.label.length * 6.2 + 14
    if (x + entryWidth > left + width && x > left) {
      x = left
      y += LEGEND_LINE
    }
    svg.push(line(x, y - 4, x + 22, y - 4, entry.color, ` stroke-width="2.5"${entry.dash === undefined ? '' : ` stroke-dasharray="${entry.dash}"`}`))
    svg.push(text(x + 28, y, entry.label, { size: 11 }))
    x += entryWidth
  }
  return { svg: svg.join(''), height: y - top + LEGEND_LINE }
}

function linePanel (plot: LinePlot, left: number, width: number): { svg: string, legendHeight: number } {
  const points = plot.series.flatMap((series) => series.points)
  const xTicks = ticksOf(plot.axes.x, points.map((point) => point.x))
  const yTicks = ticksOf(plot.axes.y, [...points.flatMap((point) => [point.low, point.high, point.y]), ...(plot.guides ?? []).map((guide) => guide.y)])
  const [x0, x1, y0, y1] = [left + MARGIN.left, left + width - MARGIN.right, HEIGHT - MARGIN.bottom, MARGIN.top]
  const x = scaleOf(plot.axes.x, xTicks, x0, x1)
  const y = scaleOf(plot.axes.y, yTicks, y0, y1)
  const svg = [text(left + MARGIN.left, 22, plot.title, { size: 14, weight: 'bold' })]
  for (const tick of xTicks) {
    svg.push(line(x(tick), y0, x(tick), y1, GRID), text(x(tick), y0 + 16, plot.axes.x.format(tick), { anchor: 'middle', size: 11 }))
  }
  for (const tick of yTicks) {
    svg.push(line(x0, y(tick), x1, y(tick), GRID), text(x0 - 6, y(tick) + 4, plot.axes.y.format(tick), { anchor: 'end', size: 11 }))
  }
  svg.push(text((x0 + x1) / 2, y0 + 36, plot.axes.x.title, { anchor: 'middle' }), text(left + 16, (y0 + y1) / 2, plot.axes.y.title, { anchor: 'middle', rotate: true }))
  svg.push(guideLines(plot.guides ?? [], y, x0, x1))
  for (const series of plot.series) {
    const sorted = [...series.points].sort((a, b) => a.x - b.x)
    const path = sorted.map((point) => `${fixed(x(point.x))},${fixed(y(point.y))}`).join(' ')
    if (sorted.length > 1) svg.push(`<polyline points="${path}" fill="none" stroke="${series.color}" stroke-width="2.5"${series.dash === undefined ? '' : ` stroke-dasharray="${series.dash}"`}/>`)
    for (const point of sorted) {
      svg.push(line(x(point.x), y(point.low), x(point.x), y(point.high), series.color, ' stroke-width="1.5"'))
      svg.push(`<circle cx="${fixed(x(point.x))}" cy="${fixed(y(point.y))}" r="3.5" fill="${series.color}"/>`)
    }
  }
  const { svg: key, height } = legend(plot.series, x0, HEIGHT - 4, x1 - x0)
  return { svg: svg.join('') + key, legendHeight: height }
}

/** Each guide as a dashed line across the plot, its label above its right end. */
function guideLines (guides: readonly Guide[], y: (value: number) => number, x0: number, x1: number): string {
  return guides.map((guide) => line(x0, y(guide.y), x1, y(guide.y), '#cf222e', ' stroke-dasharray="6 3"') +
    text(x1 - 4, y(guide.y) - 5, guide.label, { anchor: 'end', size: 11 })).join('')
}

function barPanel (plot: BarPlot, left: number, width: number): { svg: string, legendHeight: number } {
  const ticks = linearTicks([...plot.groups.flatMap((group) => group.bars.flatMap((bar) => [bar.high, bar.value])), ...(plot.guides ?? []).map((guide) => guide.y)])
  const [x0, x1, y0, y1] = [left + MARGIN.left, left + width - MARGIN.right, HEIGHT - MARGIN.bottom, MARGIN.top]
  const y = scaleOf({ title: '', format: String, scale: 'linear' }, ticks, y0, y1)
  const svg = [text(left + MARGIN.left, 22, plot.title, { size: 14, weight: 'bold' })]
  for (const value of ticks) {
    svg.push(line(x0, y(value), x1, y(value), GRID), text(x0 - 6, y(value) + 4, plot.format(value), { anchor: 'end', size: 11 }))
  }
  svg.push(text(left + 16, (y0 + y1) / 2, plot.yTitle, { anchor: 'middle', rotate: true }))
  const groupWidth = (x1 - x0) / plot.groups.length
  for (const [index, group] of plot.groups.entries()) {
    const barWidth = groupWidth * 0.7 / group.bars.length
    const start = x0 + index * groupWidth + groupWidth * 0.15
    svg.push(text(start + groupWidth * 0.35, y0 + 16, group.label, { anchor: 'middle', size: 11 }))
    for (const [slot, bar] of group.bars.entries()) {
      const middle = start + (slot + 0.5) * barWidth
      svg.push(`<rect x="${fixed(middle - barWidth * 0.4)}" y="${fixed(y(bar.value))}" width="${fixed(barWidth * 0.8)}" height="${fixed(y0 - y(bar.value))}" fill="${bar.color}"/>`)
      svg.push(line(middle, y(bar.low), middle, y(bar.high), TEXT, ' stroke-width="1.5"'))
      svg.push(text(middle, y(bar.high) - 5, plot.format(bar.value), { anchor: 'middle', size: 10 }))
    }
  }
  svg.push(guideLines(plot.guides ?? [], y, x0, x1))
  const seen = new Map(plot.groups.flatMap((group) => group.bars).map((bar) => [bar.label, bar.color]))
  const { svg: key, height } = legend([...seen].map(([label, color]) => ({ label, color })), x0, HEIGHT - 4, x1 - x0)
  return { svg: svg.join('') + key, legendHeight: height }
}

/** 1, 2 or 5 times a power of ten, at least `value`: the top of a linear axis. */
export function niceCeiling (value: number): number {
  const power = 10 ** Math.floor(Math.log10(value))
  return ([1, 2, 5, 10].find((step) => step * power >= value * 1.05) ?? 10) * power
}

/** Panels side by side, each `widths[i]` pixels wide, in one SVG document with a white background. */
export function chart (description: string, panels: ReadonlyArray<{ panel: Panel, width: number }>): string {
  let left = 0
  let legendHeight = 0
  const drawn: string[] = []
  for (const { panel, width } of panels) {
    const { svg, legendHeight: height } = panel.kind === 'lines' ? linePanel(panel, left, width) : barPanel(panel, left, width)
    drawn.push(svg)
    legendHeight = Math.max(legendHeight, height)
    left += width
  }
  const height = HEIGHT + legendHeight
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${left}" height="${height}" viewBox="0 0 ${left} ${height}" role="img" ${FONT}>` +
    `<title>${escapeXml(description)}</title><rect width="${left}" height="${height}" fill="#ffffff"/>${drawn.join('')}</svg>\n`
}
