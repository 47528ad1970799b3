"""Modal screens: confirmations, forms, help."""
