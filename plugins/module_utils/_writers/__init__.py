# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writers: apply desired state idempotently (files, the Kubernetes API), with check and diff mode."""
