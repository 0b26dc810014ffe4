"""Deplot's table from a bar chart (cpu_runtime/family_outputs/chart.py): bars measured in the picture, the axis
calibrated from tick labels (boxes given by hand here; tests/integration/test_family_outputs.py reads them by OCR)."""

import numpy as np
import pytest

from app.outputs.chart_table import cell_number, parse_deplot
from cpu_runtime.family_outputs.chart import calibrate, deplot_table, find_bars, number
from cpu_runtime.family_outputs.layout import TextBox
from cpu_runtime.family_outputs.messages import MSG_NO_BARS

BASE, TOP = 400, 100  # the axis: 0 at y 400, 100 at y 100 (3 px per unit)


def chart(values, colours) -> np.ndarray:
    rgb = np.full((460, 600, 3), 255, np.uint8)
    rgb[TOP - 10:BASE, 78:80] = 0  # the value axis line
    for index, (value, colour) in enumerate(zip(values, colours, strict=True)):
        x = 120 + 110 * index
        rgb[round(BASE - 3 * value):BASE, x:x + 60] = colour
    return rgb


def ticks() -> list[TextBox]:
    return [TextBox(40, BASE - 3 * v - 6, 70, BASE - 3 * v + 6, str(v)) for v in range(0, 101, 25)]


def labels(names) -> list[TextBox]:
    return [TextBox(120 + 110 * i + 5, BASE + 8, 120 + 110 * i + 55, BASE + 22, n) for i, n in enumerate(names)]


def test_bars_are_measured_and_valued_on_the_calibrated_axis():
    rgb = chart((40, 75, 12.5), ((220, 50, 50), (50, 160, 60), (60, 80, 220)))
    boxes = [TextBox(200, 20, 400, 44, "Sales by month"), *ticks(), *labels(("Jan", "Feb", "Mar"))]
    text = deplot_table(rgb, boxes)
    assert text == "TITLE | Sales by month <0x0A> Label | Value <0x0A> Jan | 40 <0x0A> Feb | 75 <0x0A> Mar | 12.5"
    table = parse_deplot(text)
    assert [cell_number(row[1]) for row in table.rows] == [40, 75, 12.5]


def test_bars_of_one_colour_are_separate_bars_left_to_right():
    bars = find_bars(chart((10, 20, 30), ((30, 90, 200),) * 3))
    assert [(b.x0, b.y0, b.x1, b.y1) for b in bars] == [(120, 370, 180, 400), (230, 340, 290, 400),
                                                        (340, 310, 400, 400)]


def test_the_x_axis_title_under_the_labels_names_the_label_column():
    rgb = chart((50, 60), ((220, 50, 50), (50, 160, 60)))
    text = deplot_table(rgb, [*ticks(), *labels(("Jan", "Feb")), TextBox(250, 440, 330, 454, "Month")])
    assert parse_deplot(text).header == ("Month", "Value")
    assert [row[0] for row in parse_deplot(text).rows] == ["Jan", "Feb"]


def test_unlabelled_bars_are_numbered_and_values_read_to_a_pixel():
    rgb = chart((50, 61.7), ((220, 50, 50), (50, 160, 60)))
    rows = parse_deplot(deplot_table(rgb, ticks())).rows
    assert rows == (("Bar 1", "50"), ("Bar 2", "61.7"))


def test_tick_labels_read_with_their_marks_or_units_are_numbers():
    assert [number(t) for t in ("100-", "1,000", "25%", "$5", "0.5", "−3", "Apples")] == \
        [100, 1000, 25, 5, 0.5, -3, None]


def test_an_axis_needs_two_heights_and_values_growing_upwards():
    assert calibrate([TextBox(0, 0, 10, 10, "5")]) is None
    assert calibrate([TextBox(0, 0, 10, 10, "0"), TextBox(0, 90, 10, 100, "10")]) is None
    axis = calibrate([TextBox(0, 0, 10, 10, "10"), TextBox(0, 90, 10, 100, "0")], base=95)
    assert axis.value(95) == pytest.approx(0) and axis.value(5) == pytest.approx(10)


def test_a_picture_without_bars_says_so():
    assert deplot_table(np.full((100, 100, 3), 255, np.uint8), []) == MSG_NO_BARS


def test_a_legend_swatch_off_the_base_is_no_bar():
    rgb = chart((50, 60), ((220, 50, 50), (50, 160, 60)))
    rgb[30:55, 500:525] = (220, 50, 50)  # a legend's swatch, above the plot
    assert [row[1] for row in parse_deplot(deplot_table(rgb, ticks())).rows] == ["50", "60"]


def test_one_stray_tick_box_does_not_tilt_the_axis_and_year_labels_are_labels():
    rgb = chart((50, 60), ((220, 50, 50), (50, 160, 60)))
    boxes = ticks()
    boxes[-1] = TextBox(40, TOP - 20, 70, TOP + 6, "100")  # boxed together with the axis line's top
    rows = parse_deplot(deplot_table(rgb, [*boxes, *labels(("2019", "2020"))])).rows
    assert rows == (("2019", "50"), ("2020", "60"))


def test_values_printed_on_the_bars_are_the_values_even_without_an_axis():
    """A chart that prints each value over its bar and draws no axis: Deplot answers with the printed values (the
    twin gave bar heights in pixels, "Oslo | 281px")."""
    rgb = chart((40, 75, 12.5), ((220, 50, 50), (50, 160, 60), (60, 80, 220)))
    rgb[:, 78:80] = 255  # no axis line either
    printed = [TextBox(120 + 110 * i + 15, BASE - 3 * v - 20, 120 + 110 * i + 45, BASE - 3 * v - 6, text)
               for i, (v, text) in enumerate(((40, "40.2"), (75, "75"), (12.5, "1,250")))]
    text = deplot_table(rgb, [*printed, *labels(("Oslo", "Bergen", "Bodø"))])
    assert text.endswith("Oslo | 40.2 <0x0A> Bergen | 75 <0x0A> Bodø | 1,250"), text
    assert "px" not in text
