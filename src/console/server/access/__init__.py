"""What reaches into a running job: its exposed ports and an SSH shell, on loopback only."""
