"""What the command line's ``eval`` and ``bench`` measure and draw, apart from the library.

:mod:`.evaluate` (quality on a GrabCut-style dataset), :mod:`.speed` (speed against
cv2.grabCut), :mod:`.figures` (contact sheet, speed plot), :mod:`.opencv_reference`
(cv2.grabCut run the same way by all of them). They use the library; the library
never imports them.
"""
