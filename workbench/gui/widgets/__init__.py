"""Widgets the panels are built from; they only draw what they are given.
"""
