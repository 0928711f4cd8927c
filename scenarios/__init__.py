"""Race scenarios with their oracles."""
