"""Workers that act on provisioning decisions."""
