"""The model seam: every model call, its replay from a cassette, structured output."""
