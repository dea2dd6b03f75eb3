"""The desktop app (PySide6, pyqtgraph): ``app`` starts it, ``window`` holds the main window,
``panels`` its parts, ``widgets`` what they are drawn with, ``workers`` the work off the UI thread.
"""
