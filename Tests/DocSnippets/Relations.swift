// What Relations.md's blocks take as given. Its first block declares the models.

nonisolated(unsafe) let students = Group(), admins = Group()
nonisolated(unsafe) let john = User()
nonisolated(unsafe) let swift = Project()
