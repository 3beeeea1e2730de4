"""Grouped bar charts written as PNG in pure Python (zlib + struct), so bench/report.py leaves a plot where
matplotlib is not installed. An RGB canvas, filled rectangles, a 5x7 bitmap font (upper case, digits and
the punctuation the charts use), linear or log10 value axes, and the PNG encoder (one IDAT, filter 0).
"""
import math
import struct
import zlib

# 5x7 glyphs: 7 rows top to bottom, 5 bits each, most significant bit on the left.
FONT = {
    " ": (0, 0, 0, 0, 0, 0, 0),
    "0": (0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E), "1": (0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E),
    "2": (0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F), "3": (0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E),
    "4": (0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02), "5": (0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E),
    "6": (0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E), "7": (0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08),
    "8": (0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E), "9": (0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C),
    "A": (0x0E, 0x11, 0x11, 0x11, 0x1F, 0x11, 0x11), "B": (0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E),
    "C": (0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E), "D": (0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C),
    "E": (0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F), "F": (0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10),
    "G": (0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F), "H": (0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11),
    "I": (0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E), "J": (0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C),
    "K": (0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11), "L": (0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F),
    "M": (0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11), "N": (0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11),
    "O": (0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E), "P": (0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10),
    "Q": (0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D), "R": (0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11),
    "S": (0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E), "T": (0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04),
    "U": (0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E), "V": (0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04),
    "W": (0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A), "X": (0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11),
    "Y": (0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04), "Z": (0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F),
    "x": (0, 0, 0x11, 0x0A, 0x04, 0x0A, 0x11),
    ".": (0, 0, 0, 0, 0, 0x0C, 0x0C), ",": (0, 0, 0, 0, 0x0C, 0x04, 0x08),
    "/": (0, 0x01, 0x02, 0x04, 0x08, 0x10, 0), "-": (0, 0, 0, 0x1F, 0, 0, 0),
    "(": (0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02), ")": (0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08),
    ":": (0, 0x0C, 0x0C, 0, 0x0C, 0x0C, 0), "%": (0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03),
    "=": (0, 0, 0x1F, 0, 0x1F, 0, 0), "+": (0, 0x04, 0x04, 0x1F, 0x04, 0x04, 0),
    "_": (0, 0, 0, 0, 0, 0, 0x1F), "?": (0x0E, 0x11, 0x01, 0x02, 0x04, 0, 0x04),
}
BLACK, GREY, LIGHT, WHITE = (0, 0, 0), (110, 110, 110), (225, 225, 225), (255, 255, 255)


class Canvas:
    def __init__(self, width: int, height: int, background=WHITE):
        self.width, self.height = width, height
        self.pixels = bytearray(bytes(background) * (width * height))

    def rect(self, x0: float, y0: float, x1: float, y1: float, color) -> None:
        x0, x1 = sorted((max(0, int(round(x0))), min(self.width, int(round(x1)))))
        y0, y1 = sorted((max(0, int(round(y0))), min(self.height, int(round(y1)))))
        if x1 <= x0 or y1 <= y0:
            return
        run = bytes(color) * (x1 - x0)
        for y in range(y0, y1):
            start = 3 * (y * self.width + x0)
            self.pixels[start:start + len(run)] = run

    def text(self, x: float, y: float, text: str, color=BLACK, scale: int = 2, anchor: str = "left") -> None:
        text = "".join(c if c in FONT else c.upper() if c.upper() in FONT else "?" for c in text.replace("×", "x"))
        if anchor != "left":
            x -= text_width(text, scale) / (2 if anchor == "center" else 1)
        for k, char in enumerate(text):
            for row, bits in enumerate(FONT[char]):
                for col in range(5):
                    if bits & (0x10 >> col):
                        px, py = x + (6 * k + col) * scale, y + row * scale
                        self.rect(px, py, px + scale, py + scale, color)

    def png(self) -> bytes:
        stride = 3 * self.width
        raw = b"".join(b"\x00" + bytes(self.pixels[y * stride:(y + 1) * stride]) for y in range(self.height))

        def chunk(kind: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)  # 8-bit RGB
        return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def text_width(text: str, scale: int = 2) -> int:
    return max(0, 6 * len(text) - 1) * scale


def _ticks(low: float, high: float, log: bool) -> list[float]:
    if log:
        return [10.0 ** e for e in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)]
    step = 10 ** math.floor(math.log10(max(high - low, 1e-9)))
    for factor in (1, 2, 5, 10):
        if (high - low) / (step * factor) <= 6:
            step *= factor
            break
    return [k * step for k in range(math.floor(low / step), math.ceil(high / step) + 1)]


def _label(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:g}M"
    if value >= 1e3:
        return f"{value / 1e3:g}K"
    return f"{value:g}"


def bar_panel(canvas: Canvas, box: tuple, panel: dict) -> None:
    """box = (x0, y0, x1, y1); panel: title, groups, series, values[group][series] (None = missing), log,
    colors, optional reference (a horizontal line, e.g. speedup 1)."""
    x0, y0, x1, y1 = box
    canvas.text((x0 + x1) / 2, y0, panel["title"], anchor="center")
    values = [v for row in panel["values"] for v in row if v is not None and (v > 0 or not panel["log"])]
    if panel.get("reference") is not None:
        values.append(panel["reference"])
    legend_h = 18 * len(panel["series"])
    plot = (x0 + 70, y0 + 28, x1 - 10, y1 - 30 - legend_h)
    if not values:
        canvas.text((x0 + x1) / 2, (y0 + y1) / 2, "no data", GREY, anchor="center")
        return
    log = panel["log"]
    low, high = (min(values), max(values)) if log else (min(0.0, min(values)), max(values) * 1.1)
    ticks = _ticks(low, high, log)
    low, high = ticks[0], ticks[-1]
    if high <= low:
        high = low + 1

    def y_of(v: float) -> float:
        f = (math.log10(v) - math.log10(low)) / (math.log10(high) - math.log10(low)) if log else (v - low) / (high - low)
        return plot[3] - f * (plot[3] - plot[1])
    for t in ticks:
        y = y_of(t)
        canvas.rect(plot[0], y, plot[2], y + 1, LIGHT)
        canvas.text(plot[0] - 6, y - 7, _label(t), GREY, anchor="right")
    canvas.rect(plot[0], plot[1], plot[0] + 1, plot[3] + 1, BLACK)
    canvas.rect(plot[0], plot[3], plot[2], plot[3] + 1, BLACK)
    groups, series = panel["groups"], panel["series"]
    slot = (plot[2] - plot[0]) / max(len(groups), 1)
    bar = slot * 0.8 / max(len(series), 1)
    base = y_of(low) if log else y_of(max(low, 0.0))
    for g, name in enumerate(groups):
        left = plot[0] + g * slot + slot * 0.1
        for s, value in enumerate(panel["values"][g]):
            if value is None or (log and value <= 0):
                continue
            canvas.rect(left + s * bar + 1, y_of(value), left + (s + 1) * bar - 1, base, panel["colors"][s])
            if panel.get("label_values"):
                text = panel["label_values"].format(value)
                scale = 2 if text_width(text, 2) <= bar else 1
                canvas.text(left + (s + 0.5) * bar, y_of(value) - 8 * scale, text, anchor="center", scale=scale)
        canvas.text(plot[0] + (g + 0.5) * slot, plot[3] + 8, name, anchor="center")
    if panel.get("reference") is not None:
        y = y_of(panel["reference"])
        canvas.rect(plot[0], y, plot[2], y + 2, BLACK)
    for s, name in enumerate(series):
        y = plot[3] + 30 + 18 * s
        canvas.rect(plot[0], y, plot[0] + 14, y + 14, panel["colors"][s])
        canvas.text(plot[0] + 22, y, name)


def write_bar_charts(path, title: str, panels: list[dict], panel_width: int = 620, height: int = 480) -> None:
    canvas = Canvas(panel_width * len(panels), height)
    canvas.text(canvas.width / 2, 8, title, anchor="center")
    for k, panel in enumerate(panels):
        bar_panel(canvas, (k * panel_width + 10, 36, (k + 1) * panel_width - 10, height - 8), panel)
    with open(path, "wb") as f:
        f.write(canvas.png())
