"""Reports: matplotlib figures and one self-contained HTML file."""
