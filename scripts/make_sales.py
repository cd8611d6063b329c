#!/usr/bin/env python3
"""Writes examples/sales.csv: 24 months x 3 channels x 4 regions of made-up
but plausible monthly sales, the data of terp's demo. Deterministic (a
fixed seed, the standard library only), so anyone can regenerate it:

    python3 scripts/make_sales.py > examples/sales.csv

Each channel has one clear best month for revenue per marketing dollar
(search: the 2024 holiday peak, social: a summer campaign, email: a
December 2023 newsletter), plus seasonality, regional differences and
small noise.
"""
import csv
import random
import sys

CHANNELS = {
    # base monthly spend per region, base revenue per dollar
    "search": (14000.0, 3.1),
    "social": (9500.0, 2.3),
    "email": (2600.0, 5.8),
}
REGIONS = {"north": 1.00, "south": 0.85, "east": 1.20, "west": 1.05}
# the month where a channel's return jumps, and by how much
PEAK = {"search": ("2024-11", 1.45), "social": ("2024-06", 1.55),
        "email": ("2023-12", 1.50)}
# retail seasonality of demand by calendar month (1..12)
SEASON = [0.92, 0.90, 0.97, 1.00, 1.02, 1.03, 0.98, 0.99, 1.01, 1.04, 1.10, 1.16]
PRICE = {"search": 54.0, "social": 41.0, "email": 47.0}


def months():
    for year in (2023, 2024):
        for m in range(1, 13):
            yield year, m, "%d-%02d" % (year, m)


def main(out):
    rng = random.Random(20240611)
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["month", "channel", "region", "revenue", "marketing_spend", "units"])
    for year, m, month in months():
        growth = 1.0 + 0.012 * ((year - 2023) * 12 + m - 1)
        for channel, (spend0, roi0) in CHANNELS.items():
            peak_month, lift = PEAK[channel]
            for region, rf in REGIONS.items():
                spend = spend0 * rf * growth * rng.uniform(0.9, 1.1)
                roi = roi0 * SEASON[m - 1] * rng.uniform(0.95, 1.05)
                if month == peak_month:
                    roi *= lift
                revenue = spend * roi
                units = round(revenue / (PRICE[channel] * rng.uniform(0.97, 1.03)))
                w.writerow([month, channel, region, "%.2f" % revenue,
                            "%.2f" % spend, units])


if __name__ == "__main__":
    main(sys.stdout)
